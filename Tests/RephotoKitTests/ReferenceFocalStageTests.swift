import Foundation
import RephotoKit
import RephotoTestSupport
import Testing

/// The reference camera's stages one at a time (`ReferenceFocalStages`, CShims/Core/pose/focal/), on exact
/// correspondences (no noise, no outliers) projected through known cameras (`ReferenceFocalTests.pairs`): the truth is
/// the focal length that generated them.
@Suite struct ReferenceFocalStageTests {
    static let size = ReferenceFocalTests.referenceSize
    static let current = ReferenceFocalTests.current
    static let turn = Matrix3.rotation(axis: SIMD3(0.2, 1, 0.1), angle: 12 * .pi / 180)

    static func apart(_ focal: Double) -> Correspondences {
        ReferenceFocalTests.pairs(focal: focal, rotation: turn, translation: SIMD3(1, 0.1, 0.3), outliers: 0, noise: 0)
    }

    static func stages(_ pairs: Correspondences, config: ReferenceFocalConfig = ReferenceFocalConfig()) throws -> ReferenceFocalStages {
        try ReferenceFocalStages(pairs, photoSize: size, currentCamera: current, config: config)
    }

    static func together(_ focal: Double) -> Correspondences {
        ReferenceFocalTests.pairs(focal: focal, rotation: Matrix3.rotation(axis: SIMD3(1, 1, 0.2), angle: 8 * .pi / 180),
                                  translation: SIMD3(0, 0, 0), outliers: 0, noise: 0)
    }

    /// The scan's grid is 10 % apart, then 2.5 % apart about its best: on exact geometry the best grid point lies
    /// within one fine step (2.5 %) of the truth, inside the range, and its pose holds every correspondence (each
    /// flagged) and lies near the true one: the grid's focal length, up to 2.5 % off, turns its rotation under 1° and its
    /// translation's direction by up to 4° (measured 2.3° at 600 px, the widest field of view).
    @Test(arguments: [600.0, 1600.0, 3000.0])
    func theScanBracketsTheFocalLength(focal: Double) throws {
        let pairs = Self.apart(focal)
        let scan = try Self.stages(pairs).scan()
        #expect(scan.inside)
        #expect(abs(log(scan.focal / focal)) <= log(1.025) + 1e-9, "best \(scan.focal) for \(focal)")
        #expect(scan.close.contains(scan.focal) && scan.span.contains(scan.focal), "\(scan)")
        #expect(scan.inliers == pairs.count && scan.mask == [UInt8](repeating: 1, count: pairs.count), "\(scan.inliers) of \(pairs.count)")
        #expect(Matrix3.angleDegrees(between: scan.rotation, and: Self.turn) < 1, "\(scan.rotation)")
        let t = SIMD3(1, 0.1, 0.3) / (SIMD3<Double>(1, 0.1, 0.3) * SIMD3(1, 0.1, 0.3)).sum().squareRoot()
        #expect(acos(min(1, abs((scan.translation * t).sum()))) * 180 / .pi < 4, "\(scan.translation)")
    }

    /// The refinement from the scan's own pose and inliers (what `ReferenceFocal.estimate` runs) on a pair with noise
    /// and outliers: the focal length within 3 % of the truth, on the true matches alone (the 60 random pairs, flagged
    /// out by the scan, stay out; a few true ones past three times the noise are dropped).
    @Test func theRefinementStartsFromTheScansPoseAndInliers() throws {
        let focal = 1600.0
        let pairs = ReferenceFocalTests.pairs(focal: focal, rotation: Self.turn, translation: SIMD3(1, 0.1, 0.3))
        let stages = try Self.stages(pairs)
        let scan = try stages.scan()
        #expect(scan.mask.count == pairs.count && scan.mask.reduce(0) { $0 + Int($1) } == scan.inliers)
        #expect(scan.mask.suffix(60).filter { $0 != 0 }.count <= 3, "outliers taken in by the scan")
        let refined = try stages.refine(from: scan.focal, model: .fundamental, scan: scan, mask: scan.mask)
        #expect(abs(refined.focal / focal - 1) < 0.03, "\(refined)")
        #expect(refined.inliers <= scan.inliers && refined.inliers >= 280, "\(refined.inliers) of \(scan.inliers)")
    }

    /// The cameras at one place, turned 8°: the homography is exact, and the focal length that makes it a rotation is
    /// the truth within 1e-6 (the golden-section search's 60 steps resolve far finer; measured within 1e-8); the
    /// fundamental matrix fits them too (it is not determined there).
    @Test(arguments: [700.0, 1600.0, 4000.0])
    func theColocatedCaseRecoversARotationsFocalLength(focal: Double) throws {
        let pairs = Self.together(focal)
        let found = try Self.stages(pairs).colocated()
        #expect(found.inside && found.inliers == pairs.count && found.mask == [UInt8](repeating: 1, count: pairs.count), "\(found)")
        #expect(abs(found.focal / focal - 1) < 1e-6, "\(found.focal) for \(focal)")
        #expect(found.gap < 1e-6, "\(found.gap)")
        #expect(found.fundamentalInliers >= found.inliers - 5, "\(found)")
    }

    /// The cameras a metre apart in a scene 4-20 m deep: no homography holds the rotation rule's share of the fundamental
    /// matrix's inliers (pose.referenceFocal.rotationShare), so the estimator takes the scan.
    @Test func theColocatedCaseLosesToTheScanWhenTheCamerasStandApart() throws {
        let pairs = Self.apart(1600)
        let found = try Self.stages(pairs).colocated()
        #expect(Double(found.inliers) < ReferenceFocalConfig().rotationShare * Double(found.fundamentalInliers), "\(found)")
        #expect(found.mask.filter { $0 != 0 }.count == found.inliers)
        #expect(found.fundamentalInliers > 9 * pairs.count / 10, "\(found)")
    }

    /// The refinement, started 8 % above or 7 % below the truth (inside its first bracket of ± 10 %), returns to the truth
    /// within 1e-6 for both models (its last golden-section search, 30 steps over ± 3 %, resolves about 3e-8); the
    /// principal point, truly at the centre, stays within a pixel of it (the rotation keeps it there exactly).
    @Test(arguments: [1.08, 0.93])
    func theRefinementReturnsAPerturbedStartToTheTruth(factor: Double) throws {
        let focal = 1600.0
        let config = ReferenceFocalConfig()
        let relative = try Self.stages(Self.apart(focal), config: config).refine(from: factor * focal, model: .fundamental)
        #expect(abs(relative.focal / focal - 1) < 1e-6, "\(relative)")
        #expect(abs(relative.principalPoint.x - 449.5) < 1 && abs(relative.principalPoint.y - 449.5) < 1, "\(relative)")
        let rotation = try Self.stages(Self.together(focal), config: config).refine(from: factor * focal, model: .rotation)
        #expect(abs(rotation.focal / focal - 1) < 1e-6 && !rotation.principalPointEstimated, "\(rotation)")
        #expect(rotation.principalPoint == Point2(x: 449.5, y: 449.5))
    }

    /// The loop settings come from the registry (pose.referenceFocal.*) and are checked in the shim too.
    @Test func theScansLoopSettingsAreChecked() throws {
        var config = ReferenceFocalConfig()
        config.minIterations = config.maxIterations + 1
        let error = #expect(throws: RephotoError.self) {
            try Self.stages(Self.apart(1600), config: config).scan()
        }
        #expect(error?.kind == .badInput)
    }

    /// The six-point solver on exact geometry: random scenes and motions, the reference's focal length 0.5-3x the
    /// nominal (its principal point off the centre), the current camera calibrated. The true focal length, rotation and
    /// translation are among the solutions to 1e-6 (relative; measured at 1e-9 and better on 99.9 % of 10,000 random
    /// samples, the rest lose digits where eigenvalues crowd, so a few draws are allowed a miss).
    @Test func theSixPointSolverRecoversTheTruth() throws {
        var random = SplitMix(seed: 61)
        let nominal = 1000.0, principal = Point2(x: 431, y: 467)
        var misses = 0
        for _ in 0..<100 {
            let focal = nominal * exp(random.uniform(log(0.5), log(3)))
            let r = Matrix3.rotation(axis: SIMD3(random.uniform(-1, 1), random.uniform(-1, 1), random.uniform(-1, 1)), angle: random.uniform(0, 0.5))
            var t = SIMD3(random.uniform(-1, 1), random.uniform(-1, 1), random.uniform(-1, 1))
            t /= (t * t).sum().squareRoot()
            var a: [Point2] = [], b: [Point2] = []
            while a.count < 6 {
                let z = random.uniform(3, 8)
                let x = SIMD3(random.uniform(-0.5, 0.5) * z, random.uniform(-0.5, 0.5) * z, z), y = r * x + t
                guard y.z > 0.5 else { continue }
                a.append(Point2(x: focal * x.x / x.z + principal.x, y: focal * x.y / x.z + principal.y))
                b.append(Point2(x: Self.current.fx * y.x / y.z + Self.current.cx, y: Self.current.fy * y.y / y.z + Self.current.cy))
            }
            let found = try ReferenceFocalStages.sixPoint(reference: a, current: b, principal: principal, currentCamera: Self.current,
                                                          focalRange: (0.3 * nominal)...(10 * nominal))
            #expect(found.allSatisfy { (0.3 * nominal...10 * nominal).contains($0.focal) })
            func norm(_ v: SIMD3<Double>) -> Double { (v * v).sum().squareRoot() }
            let best = found.map { p in
                abs(p.focal / focal - 1) + norm(p.rotation.row0 - r.row0) + norm(p.rotation.row1 - r.row1) + norm(p.rotation.row2 - r.row2) +
                    norm(p.translation - t)
            }.min() ?? .infinity
            if !(best < 1e-6) { misses += 1 }
        }
        #expect(misses <= 2, "\(misses) of 100 samples without the truth among their solutions")
    }

    /// The six-point loop and the joint refinement on 300 matches with 0.5 px noise and 60 outliers, the principal
    /// point 20 px off the centre: the focal length within 2 % of the truth, within 3 of its own sigmas, and the
    /// principal point moved towards the truth.
    @Test(arguments: [700.0, 1600.0, 3000.0])
    func theFreeFocalLoopFindsTheFocalLength(focal: Double) throws {
        var config = ReferenceFocalConfig()
        config.solver = .sixPoint
        let offset = (x: 20.0, y: -15.0)
        let pairs = ReferenceFocalTests.pairs(focal: focal, rotation: Self.turn, translation: SIMD3(1, 0.1, 0.3), offset: offset)
        let found = try ReferenceFocal.estimate(pairs, referenceSize: Self.size, currentCamera: Self.current, config: config)
        let error = abs(found.camera.fx / focal - 1) * 100
        #expect(error < 2 && error < 3 * found.focalSigmaPercent, "\(found.camera.fx) ± \(found.focalSigmaPercent) % for \(focal)")
        #expect(found.inliers >= 250 && found.inliers <= 300, "\(found.inliers)")
        let before = hypot(offset.x, offset.y), after = hypot(found.camera.cx - 449.5 - offset.x, found.camera.cy - 449.5 - offset.y)
        #expect(after < before, "principal point \(found.camera.cx), \(found.camera.cy)")
    }

    /// The free-focal stage alone, on the same pairs as above (principal point 20 px off): the loop finds a model whose
    /// cost is finite, the joint refinement runs on its inliers, and its focal length is within 2 % of the truth with the
    /// principal point estimated.
    @Test func theFreeFocalStageReportsTheLoopAndItsRefinement() throws {
        let focal = 1600.0
        let pairs = ReferenceFocalTests.pairs(focal: focal, rotation: Self.turn, translation: SIMD3(1, 0.1, 0.3), offset: (20, -15))
        let free = try Self.stages(pairs).free()
        #expect(free.found && free.refined && free.cost.isFinite, "\(free)")
        #expect(free.loopInliers >= 250 && free.answer.inliers <= free.loopInliers, "\(free)")
        #expect(abs(free.answer.focal / focal - 1) < 0.02 && free.answer.principalPointEstimated, "\(free.answer)")
    }
}
