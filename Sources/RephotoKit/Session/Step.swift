import Foundation

/// Where the person should step to stand at the reference's vantage point: the reference camera's centre in the
/// current camera's axes (x right, y down, z forward), which is the placement's t under X_current = R X_reference + t.
/// Measured in the structure a keyframe fixed, so it stays determined as the person converges.
public struct Step: Codable, Equatable, Sendable {
    /// The step, in units of the keyframe's baseline (its distance from the reference's vantage point).
    public var vector: [Double]
    /// Its length, baselines.
    public var baselines: Double
    /// Its length as a fraction of the distance to the subject (the structure's median depth).
    public var depthFraction: Double
    /// 1-sigma of the direction (root of the variance across it), degrees, and of the length, baselines; the
    /// structure's points are taken as exact, so both are lower bounds.
    public var directionSigmaDegrees: Double
    public var lengthSigmaBaselines: Double
    /// The session frame whose baseline is the unit.
    public var keyframe: Int
    /// The direction's 1-sigma is under `session.maxStepSigma`: the hints say which way to step.
    public var determined: Bool
    /// The step is under `session.convergedStepFraction` of the distance to the subject.
    public var arrived: Bool

    init(placement: CameraPlacement, structure: SceneStructure, config: SessionConfig) {
        let t = placement.translation, length = simd_length(t)
        let direction = length > 0 ? t / length : SIMD3(0, 0, 1)
        let Σ = placement.translationCovariance
        let along = simd_dot(direction, Σ * direction)
        let across = max(0, Σ[0, 0] + Σ[1, 1] + Σ[2, 2] - along)
        vector = [t.x, t.y, t.z]
        baselines = length
        depthFraction = length / max(structure.medianDepth, .leastNormalMagnitude)
        directionSigmaDegrees = length > 0 ? atan2(across.squareRoot(), length) * 180 / .pi : 180
        lengthSigmaBaselines = max(0, along).squareRoot()
        keyframe = structure.keyframe
        determined = directionSigmaDegrees <= config.maxStepSigma
        arrived = depthFraction <= config.convergedStepFraction
    }

    /// What to do, largest first: each axis that is off by more than a third of the step (and 0.5 %), in percent of
    /// the distance to the subject. Axes: x right (`step` right / left), y down (`raise` down / up), z forward (`step`).
    public var actions: [GuidanceAction] {
        guard determined, !arrived else { return [] }
        let ways: [(kind: GuidanceAction.Kind, positive: GuidanceAction.Direction, negative: GuidanceAction.Direction)]
            = [(.step, .right, .left), (.raise, .down, .up), (.step, .forward, .back)]
        var out: [(Double, GuidanceAction)] = []
        for axis in 0..<3 {
            let percent = baselines > 0 ? vector[axis] / baselines * depthFraction * 100 : 0
            guard abs(percent) > depthFraction * 100 / 3, abs(percent) >= 0.5 else { continue }
            out.append((abs(percent), GuidanceAction(ways[axis].kind, percent > 0 ? ways[axis].positive : ways[axis].negative, amount: abs(percent))))
        }
        return out.sorted { $0.0 > $1.0 }.map(\.1)
    }

    /// The actions' texts, in their order.
    public var hints: [String] { actions.map(\.text) }
}

private func simd_length(_ v: SIMD3<Double>) -> Double { (v * v).sum().squareRoot() }
private func simd_dot(_ a: SIMD3<Double>, _ b: SIMD3<Double>) -> Double { (a * b).sum() }
