import Testing
import RephotoKit

@Suite struct VisibleTextTests {
    /// Every character that can break a one-line message, move a terminal's cursor or reorder what it shows is written
    /// as an escape (Unicode's line-breaking and bidi-control classes); printable text, accents included, is kept.
    @Test func lineBreakersAndControlsAreEscaped() {
        #expect("a\nb\rc\td".visible == "a\\nb\\rc\\td")
        #expect("\u{1B}[31m\u{7F}\u{85}".visible == "\\u{1B}[31m\\u{7F}\\u{85}")
        #expect("e\u{2028}f\u{2029}g".visible == "e\\u{2028}f\\u{2029}g")
        #expect("\u{202E}gpj.exe\u{2066}".visible == "\\u{202E}gpj.exe\\u{2066}")
        #expect("Zürich – 東京.jpg".visible == "Zürich – 東京.jpg")
    }
}
