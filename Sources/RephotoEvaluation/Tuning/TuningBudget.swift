import Foundation
import RephotoKit

/// How much of a space a `rephoto tune` run may spend: `--trials N` (random and halving: N draws; grid: the first
/// N combinations in order) and `--timeout DURATION` (no trial starts after it; the one running finishes).
public struct TuningBudget: Sendable, Equatable {
    public var trials: Int?
    /// Seconds.
    public var timeout: Double?

    public init(trials: Int? = nil, timeout: Double? = nil) {
        self.trials = trials
        self.timeout = timeout
    }

    /// `--trials` as given: 1 to 1,000,000 (the space's own limit).
    public static func checkTrials(_ trials: Int) throws {
        guard (1...1_000_000).contains(trials) else { throw RephotoError.badInput("--trials \(trials) must be 1 to 1000000") }
    }

    /// A duration as people write it: a positive number with a unit, s, m, h or d (`90s`, `10m`, `1.5h`), or
    /// several (`1h30m`); seconds, at most 30 days.
    public static func seconds(_ text: String) throws -> Double {
        let bad = RephotoError.badInput("--timeout '\(text.visible)' must be a duration such as 90s, 10m, 2h or 1h30m")
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var total = 0.0, number = ""
        for character in text.lowercased() {
            if character.isASCII && (character.isNumber || character == ".") {
                number.append(character)
            } else if let unit = units[character], let value = Double(number), value.isFinite {
                total += value * unit
                number = ""
            } else {
                throw bad
            }
        }
        guard number.isEmpty, total > 0, total <= 30 * 86_400 else { throw bad }
        return total
    }
}
