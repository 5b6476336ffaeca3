import Foundation

/// Deterministic random numbers (SplitMix64), so generated data is identical for a seed on every machine.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    /// The generator as it is after `draws` calls of `next()`: the state only advances by a constant, so any
    /// point of the stream is reached at once (a tuner's trial i without drawing trials 0..<i).
    public init(seed: UInt64, skipping draws: UInt64) { state = seed &+ draws &* 0x9E37_79B9_7F4A_7C15 }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    public mutating func uniform(_ low: Double, _ high: Double) -> Double { Double.random(in: low..<high, using: &self) }

    /// Standard normal (Box–Muller).
    public mutating func gaussian() -> Double {
        let u = max(uniform(0, 1), 1e-300), v = uniform(0, 1)
        return (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
    }

    public mutating func unitVector() -> SIMD3<Double> {
        let v = SIMD3(gaussian(), gaussian(), gaussian())
        return v / length(v)
    }
}
