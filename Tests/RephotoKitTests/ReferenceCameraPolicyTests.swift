import Foundation
import RephotoKit
import RephotoTestSupport
import Testing

/// The one home of the unknown reference camera's rules (`ReferenceCameraPolicy`), per frame, on correspondences
/// projected through known cameras: the truth is the reference camera that made them.
@Suite struct ReferenceCameraPolicyTests {
    static let current = CameraIntrinsics(fx: 1000, fy: 1000, cx: 639.5, cy: 479.5, imageSize: ImageSize(width: 1280, height: 960))

    /// Points 4-20 m ahead seen by a reference camera of focal length `focal`, its principal point at the centre of
    /// `size`, and by the current camera a metre aside and turned 12°; ±0.5 px noise and 60 random pairs.
    /// `plane`: the points lie on one plane 7-9 m ahead, tilted 17° (X.z = 8 - 0.3 X.x), instead.
    static func pairs(focal: Double, size: ImageSize, count: Int = 300, seed: UInt64 = 3, plane: Bool = false) -> Correspondences {
        var random = SplitMix(seed: seed)
        let r = Matrix3.rotation(axis: SIMD3(0.2, 1, 0.1), angle: 12 * .pi / 180), t = SIMD3(1.0, 0.1, 0.3)
        let (w, h) = (Double(size.width), Double(size.height))
        var a: [Point2] = [], b: [Point2] = []
        while a.count < count {
            let (u, v) = (random.uniform(-0.4, 0.4), random.uniform(-0.3, 0.3))
            let z = plane ? 8 / (1 + 0.3 * u) : random.uniform(4, 20)
            let x = SIMD3(u * z, v * z, z)
            let y = r * x + t
            guard y.z > 0.5 else { continue }
            let p = Point2(x: focal * x.x / x.z + (w - 1) / 2 + random.uniform(-0.5, 0.5), y: focal * x.y / x.z + (h - 1) / 2 + random.uniform(-0.5, 0.5))
            let q = Point2(x: 1000 * y.x / y.z + 639.5 + random.uniform(-0.5, 0.5), y: 1000 * y.y / y.z + 479.5 + random.uniform(-0.5, 0.5))
            guard (0..<w).contains(p.x), (0..<h).contains(p.y), (0..<1280).contains(q.x), (0..<960).contains(q.y) else { continue }
            a.append(p)
            b.append(q)
        }
        for _ in 0..<60 {
            a.append(Point2(x: random.uniform(0, w), y: random.uniform(0, h)))
            b.append(Point2(x: random.uniform(0, 1280), y: random.uniform(0, 960)))
        }
        return Correspondences(matches: [], reference: a, current: b)
    }

    static func reference() throws -> ReferenceFrame {
        try PoseEstimator().prepareReference(try Fixtures.image("graf1.png"), camera: nil, cameraUnknown: true)
    }

    /// Enough correspondences of two cameras apart: the frame's camera holds, within 3 % of the truth, and is the
    /// estimate it reports.
    @Test func aFramesCameraHoldsWhenItsMatchesDetermineIt() throws {
        let reference = try Self.reference()
        let policy = try PoseEstimator().referenceCameraPolicy
        let found = try policy.frame(Self.pairs(focal: 1200, size: reference.size), reference: reference, currentCamera: Self.current,
                                     currentSize: Self.current.imageSize!)
        let determined = try #require(found.determined, "\(String(describing: found.refusal))")
        #expect(abs(determined.fx - 1200) / 1200 < 0.03, "\(determined)")
        #expect(found.refusal == nil && found.estimate?.fx == determined.fx)
    }

    /// One plane seen from apart fixes no focal length (a homography's eight degrees of freedom against the rotation,
    /// the plane and the focal length's nine): refused, where the same cameras on a scene with depth are determined.
    @Test func aPlaneSeenFromApartDeterminesNoFocalLength() throws {
        let reference = try Self.reference()
        let policy = try PoseEstimator().referenceCameraPolicy
        let share = policy.config.referenceFocal.planeShare, gap = policy.config.referenceFocal.maxRotationGap
        func focal(_ plane: Bool) throws -> ReferenceFocal {
            try ReferenceFocal.estimate(Self.pairs(focal: 1200, size: reference.size, plane: plane), referenceSize: reference.size,
                                        currentCamera: Self.current, config: policy.config.referenceFocal)
        }
        let flat = try focal(true), deep = try focal(false)
        #expect(flat.model == .fundamental && ReferenceCameraPolicy.plane(flat, share: share, maxRotationGap: gap) != nil,
                "\(flat.homographyInliers) of \(flat.fundamentalInliers)")
        #expect(ReferenceCameraPolicy.plane(deep, share: share, maxRotationGap: gap) == nil, "\(deep.homographyInliers) of \(deep.fundamentalInliers)")
        let refused = try policy.frame(Self.pairs(focal: 1200, size: reference.size, plane: true), reference: reference,
                                       currentCamera: Self.current, currentSize: Self.current.imageSize!)
        #expect(refused.determined == nil && refused.estimate != nil && refused.refusal?.cause == .referenceCameraUndetermined)
    }

    /// The same matches under a rule asking for more inliers than there are: an estimate, not determined, and the
    /// typed refusal.
    @Test func aFramesCameraOnTooFewInliersIsRefused() throws {
        let reference = try Self.reference()
        var config = PipelineConfig()
        config.pose.referenceFocal.minInliers = 10_000
        let found = try PoseEstimator(config: config).referenceCameraPolicy.frame(Self.pairs(focal: 1200, size: reference.size), reference: reference,
                                                                              currentCamera: Self.current, currentSize: Self.current.imageSize!)
        #expect(found.estimate != nil && found.determined == nil)
        guard case .referenceCameraUndetermined = found.refusal else { Issue.record("refusal \(String(describing: found.refusal))"); return }
    }

    /// Random pairs determine no camera.
    @Test func randomPairsDetermineNoCamera() throws {
        let reference = try Self.reference()
        var random = SplitMix(seed: 11)
        let a = (0..<300).map { _ in Point2(x: random.uniform(0, 800), y: random.uniform(0, 640)) }
        let b = (0..<300).map { _ in Point2(x: random.uniform(0, 1280), y: random.uniform(0, 960)) }
        let found = try PoseEstimator().referenceCameraPolicy.frame(Correspondences(matches: [], reference: a, current: b), reference: reference,
                                                                    currentCamera: Self.current, currentSize: Self.current.imageSize!)
        #expect(found.determined == nil)
        guard case .referenceCameraUndetermined = found.refusal else { Issue.record("refusal \(String(describing: found.refusal))"); return }
    }
}
