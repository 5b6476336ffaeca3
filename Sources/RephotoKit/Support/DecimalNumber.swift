/// A number written the way a CSV column or a command-line value is: decimal, optionally signed, with an optional
/// fraction and exponent, and finite. Swift's `Double(_:)` also reads hexadecimal ("0x1" is 1), "nan" and "inf",
/// which no sensor log writes: a quaternion column holding "0x1" was taken as 1.
package func decimalNumber<S: StringProtocol>(_ text: S) -> Double? {
    guard isDecimalNumeral(text), let value = Double(String(text)), value.isFinite else { return nil }
    return value
}

/// Whether `text` is written as `decimalNumber` reads (its value may still overflow a Double, as 1e400 does).
package func isDecimalNumeral<S: StringProtocol>(_ text: S) -> Bool {
    let bytes = Array(text.utf8)
    var i = 0
    func digits() -> Int {
        let start = i
        while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") { i += 1 }
        return i - start
    }
    func sign() { if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 } }
    sign()
    var mantissa = digits()
    if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
        i += 1
        mantissa += digits()
    }
    guard mantissa > 0 else { return false }
    if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
        i += 1
        sign()
        guard digits() > 0 else { return false }
    }
    return i == bytes.count
}
