extension String {
    /// The text with control characters written as escapes (`\n`, `\u{1B}`), for a line a person reads: a newline
    /// in a file name split a one-line message, an ESC sequence in one reached the terminal, and the
    /// bidirectional overrides (U+202E in a name) reorder what a terminal shows; U+2028 and U+2029 break lines in some viewers.
    public var visible: String {
        var out = ""
        for scalar in unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || (0x2028...0x202E).contains(scalar.value)
                || (0x2066...0x2069).contains(scalar.value):
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true).leftPadded(to: 2) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
