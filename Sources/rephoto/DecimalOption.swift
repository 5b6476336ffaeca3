import ArgumentParser
import RephotoKit

/// Reads a `Double` option as decimal notation only: ArgumentParser's own `Double` reads "0x1" as 1 and
/// accepts "nan" and "inf".
func decimalOption(_ text: String) throws -> Double {
    guard let value = decimalNumber(text) else {
        throw ValidationError("'\(text)' is not a finite decimal number")
    }
    return value
}
