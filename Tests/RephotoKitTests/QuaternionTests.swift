import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation

@Suite struct QuaternionTests {
    static func randomRotations(_ count: Int, seed: UInt64 = 11) -> [Quaternion] {
        var g = SplitMix(seed: seed)
        return (0..<count).map { _ in
            Quaternion(w: g.uniform(-1, 1), x: g.uniform(-1, 1), y: g.uniform(-1, 1), z: g.uniform(-1, 1)).normalized
        }
    }

    /// q -> R -> q (up to sign) and R(q) against Rodrigues' formula from the quaternion's axis and angle.
    @Test func matrixRoundTripIsExact() {
        for q in Self.randomRotations(500) {
            let back = Quaternion(rotationMatrix: q.rotationMatrix)
            #expect(abs(abs(back.dot(q)) - 1) < 1e-12)
            let angle = 2 * acos(min(1, abs(q.w)))
            let axis = SIMD3(q.x, q.y, q.z) * (q.w < 0 ? -1 : 1)
            let rodrigues = Matrix3.rotation(axis: axis, angle: angle)
            #expect(zip(rodrigues.elements, q.rotationMatrix.elements).allSatisfy { abs($0 - $1) < 1e-9 })
        }
    }

    /// Euler 2-1-3: q -> (roll, pitch, yaw) -> q, and the matrix Rz(yaw) Rx(pitch) Ry(roll) built independently.
    @Test func eulerRoundTripIsExact() {
        for q in Self.randomRotations(500) {
            let e = EulerAngles213(q)
            guard abs(e.pitch) < 89 * .pi / 180 else { continue }  // gimbal lock: roll and yaw are not separable
            #expect(abs(abs(e.quaternion.dot(q)) - 1) < 1e-12)
            let m = Matrix3.rotation(axis: SIMD3(0, 0, 1), angle: e.yaw) * Matrix3.rotation(axis: SIMD3(1, 0, 0), angle: e.pitch)
                * Matrix3.rotation(axis: SIMD3(0, 1, 0), angle: e.roll)
            #expect(zip(m.elements, q.rotationMatrix.elements).allSatisfy { abs($0 - $1) < 1e-9 })
            let again = EulerAngles213(Quaternion(rotationMatrix: m))
            #expect(abs(again.roll - e.roll) < 1e-9 && abs(again.pitch - e.pitch) < 1e-9 && abs(again.yaw - e.yaw) < 1e-9)
        }
    }

    @Test func productInverseSlerpAndAngle() {
        let qs = Self.randomRotations(100, seed: 3)
        for (a, b) in zip(qs, qs.dropFirst()) {
            let product = (a * b).rotationMatrix, matrices = a.rotationMatrix * b.rotationMatrix
            #expect(zip(product.elements, matrices.elements).allSatisfy { abs($0 - $1) < 1e-12 })
            #expect(abs((a * a.inverse).w - 1) < 1e-12)
            #expect(abs(a.angleDegrees(to: b) - Matrix3.angleDegrees(between: a.rotationMatrix, and: b.rotationMatrix)) < 1e-6)
            // Slerp halfway lies at half the angle from both ends.
            let mid = a.slerp(to: b, t: 0.5)
            #expect(abs(mid.angleDegrees(to: a) - a.angleDegrees(to: b) / 2) < 1e-6)
            #expect(abs(mid.angleDegrees(to: b) - a.angleDegrees(to: b) / 2) < 1e-6)
            #expect(abs(a.slerp(to: b, t: 0).angleDegrees(to: a)) < 1e-6 && abs(a.slerp(to: b, t: 1).angleDegrees(to: b)) < 1e-6)
        }
        let q = Quaternion(axis: SIMD3(0, 0, 1), angle: .pi / 2)
        #expect(abs(q.angleDegrees(to: .identity) - 90) < 1e-9)
        #expect(abs(Quaternion(w: -q.w, x: -q.x, y: -q.y, z: -q.z).angleDegrees(to: q)) < 1e-6)
    }

    /// The paper's formulas on hand-computed cases.
    @Test func paperFormulasOnHandComputedCases() {
        let pitch10 = Quaternion(axis: SIMD3(1, 0, 0), angle: 10 * .pi / 180)
        #expect(abs(EulerAngles213(pitch10).degrees.pitch - 10) < 1e-12)
        #expect(abs(EulerAngles213(pitch10).degrees.roll) < 1e-12)
        let roll20 = Quaternion(axis: SIMD3(0, 1, 0), angle: 20 * .pi / 180)
        #expect(abs(EulerAngles213(roll20).degrees.roll - 20) < 1e-12)
        let yaw30 = Quaternion(axis: SIMD3(0, 0, 1), angle: 30 * .pi / 180)
        #expect(abs(EulerAngles213(yaw30).degrees.yaw - 30) < 1e-12)
    }
}
