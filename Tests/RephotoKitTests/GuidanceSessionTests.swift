import RephotoTestSupport
import Foundation
import Testing
import RephotoKit
import RephotoData
import RephotoSynthesis

/// Guidance sessions: Lucas-Kanade tracking against known image motions, triangulation and camera placement against
/// exact geometry, and the session's loop on a rendered walk up to the reference's vantage point with known truth.
@Suite struct GuidanceSessionTests {
    /// graf1 warped by a known homography: every tracked point lands where H sends it.
    @Test func trackingFollowsAKnownHomography() throws {
        let image = try Image(contentsOfFile: Fixtures.sample("graf1.png"), grayscale: true)
        let truth = Matrix3(rows: [[0.998, -0.035, 9.3], [0.035, 0.998, -4.6], [1e-5, -2e-5, 1]])
        let moved = try image.warped(by: truth, width: image.width, height: image.height)
        let config = TrackingConfig()
        let from = try FramePyramid(image, config: config), to = try FramePyramid(moved, config: config)
        let features = try Features(image: image, config: FeatureConfig())
        let inside = features.keypoints.map(\.point).filter { p in
            let q = truth.project(p)
            return q.x > 30 && q.y > 30 && q.x < Double(image.width - 30) && q.y < Double(image.height - 30)
        }
        #expect(inside.count > 300)
        let tracked = try from.track(inside, to: to, config: config)
        let errors = zip(inside, tracked).compactMap { p, q in q.map { $0.distance(to: truth.project(p)) } }.sorted()
        #expect(Double(errors.count) > 0.8 * Double(inside.count), "tracked \(errors.count) of \(inside.count)")
        // Lucas-Kanade's window moves by translation only: under this 2° turn and slight perspective it lands within a
        // fraction of a pixel, well inside the 1 px forward-backward bound.
        #expect(errors[errors.count / 2] < 0.25, "median \(errors[errors.count / 2]) px")
        #expect(errors[errors.count * 95 / 100] < 1, "p95 \(errors[errors.count * 95 / 100]) px")
    }

    /// Into an unrelated picture, the forward-backward check drops almost every point instead of reporting a track.
    @Test func forwardBackwardDropsPointsIntoAnUnrelatedImage() throws {
        let image = try Image(contentsOfFile: Fixtures.sample("graf1.png"), grayscale: true)
        let other = try Image(contentsOfFile: Fixtures.sample("baboon.jpg"), grayscale: true).resized(width: image.width, height: image.height)
        let config = TrackingConfig()
        let points = try Features(image: image, config: FeatureConfig()).keypoints.map(\.point)
        let tracked = try FramePyramid(image, config: config).track(points, to: FramePyramid(other, config: config), config: config)
        let kept = tracked.compactMap { $0 }.count
        #expect(Double(kept) < 0.05 * Double(points.count), "kept \(kept) of \(points.count)")
    }

    static func project(_ X: SIMD3<Double>, _ R: Matrix3, _ t: SIMD3<Double>, _ camera: CameraIntrinsics) -> Point2 {
        let c = R * X + t
        return Point2(x: camera.fx * c.x / c.z + camera.cx, y: camera.fy * c.y / c.z + camera.cy)
    }

    static func scene(count: Int, seed: UInt64) -> [SIMD3<Double>] {
        var random = SeededRandom(seed: seed)
        return (0..<count).map { _ in SIMD3(random.uniform(-3, 3), random.uniform(-2, 2), random.uniform(6, 14)) }
    }

    /// Exact projections: triangulation returns the points, placement the camera and exactly the planted outliers.
    @Test func triangulationAndPlacementRecoverExactGeometry() throws {
        let camera = Fixtures.camera
        let points = Self.scene(count: 120, seed: 3)
        let R2 = Matrix3.rotation(axis: SIMD3(0, 1, 0), angle: 5 * .pi / 180), t2 = SIMD3(-1.0, 0.05, 0.2)
        let a = points.map { Self.project($0, .identity, .zero, camera) }, b = points.map { Self.project($0, R2, t2, camera) }
        let triangulated = try SceneStructure.triangulate(reference: a, current: b, referenceCamera: camera, currentCamera: camera,
                                                          rotation: R2, translation: t2, minParallaxDegrees: 0, maxReprojectionPixels: 0.01)
        for (X, found) in zip(points, triangulated) {
            let Y = try #require(found)
            #expect(length(Y - X) < 1e-6 * length(X))
        }
        // A third camera among those points, with 15 % gross outliers.
        let R3 = Matrix3.rotation(axis: SIMD3(0.3, 1, 0.1), angle: 12 * .pi / 180), t3 = SIMD3(0.4, -0.2, -0.9)
        var pixels = points.map { Self.project($0, R3, t3, camera) }
        var random = SeededRandom(seed: 9)
        let outliers = Set((0..<points.count).filter { $0 % 7 == 0 })
        for i in outliers { pixels[i] = Point2(x: random.uniform(0, 640), y: random.uniform(0, 480)) }
        let placed = try CameraPlacement.place(points: points, pixels: pixels, camera: camera, thresholdPixels: 2, seed: 1)
        #expect(Matrix3.angleDegrees(between: placed.rotation, and: R3) < 1e-6)
        #expect(length(placed.translation - t3) < 1e-6)
        #expect(Set(placed.inliers.indices.filter { !placed.inliers[$0] }) == outliers)
    }

    /// With 0.5 px noise, the placement's translation lies within 4 sigma of the truth on each axis.
    @Test func placementUncertaintyCoversItsError() throws {
        let camera = Fixtures.camera
        let points = Self.scene(count: 80, seed: 5)
        let R = Matrix3.rotation(axis: SIMD3(0, 1, 0.2), angle: 4 * .pi / 180), t = SIMD3(0.3, 0.1, -0.5)
        var random = SeededRandom(seed: 11)
        let pixels = points.map { X in
            let p = Self.project(X, R, t, camera)
            return Point2(x: p.x + random.uniform(-0.85, 0.85), y: p.y + random.uniform(-0.85, 0.85))  // sd 0.49 px
        }
        let placed = try CameraPlacement.place(points: points, pixels: pixels, camera: camera, thresholdPixels: 3, seed: 2)
        #expect(placed.inlierCount == points.count)
        #expect(placed.rmsPixels > 0.3 && placed.rmsPixels < 0.8, "rms \(placed.rmsPixels)")
        for axis in 0..<3 {
            let sigma = placed.translationCovariance[axis, axis].squareRoot()
            #expect(sigma > 0 && abs(placed.translation[axis] - t[axis]) < 4 * sigma, "axis \(axis): \(placed.translation[axis]) vs \(t[axis]), sigma \(sigma)")
        }
    }

    /// A rendered walk from 1.9 m up to the reference's vantage point (the street, 640x480), rendered once for the suite.
    static let rendered: Result<FrameSequence, any Error> = Result {
        let options = try SyntheticSequenceOptions.parse(["--width", "640", "--height", "480", "--motion", "approach", "--step", "0.08",
                                                         "--frames", "24", "--seed", "21", "--name", "walk"])
        let dir = try Scratch.directory()
        _ = try SyntheticSequence.generate(options, textureDirectory: Fixtures.textures, to: dir)
        return try FrameSequence.load(from: dir)
    }

    static func walk() throws -> FrameSequence { try rendered.get() }

    static func session(_ sequence: FrameSequence, robustEvery: Int) throws -> (GuidanceSession, PoseEstimator) {
        var config = PipelineConfig()
        config.session.robustEvery = robustEvery
        let estimator = try PoseEstimator(config: config)
        let reference = try estimator.prepareReference(estimator.load(contentsOfFile: sequence.path(of: sequence.manifest.reference!)),
                                                       camera: sequence.camera())
        return (GuidanceSession(estimator: estimator, reference: reference, camera: try sequence.camera()), estimator)
    }

    /// Robust updates on schedule, tracking between; the step points to the vantage point within 15° (median) on
    /// every kind of frame, the last ones too, where the two views alone leave the translation nearly undetermined.
    @Test func walkingUpTheStepPointsToTheVantagePoint() throws {
        let sequence = try Self.walk()
        let (session, estimator) = try Self.session(sequence, robustEvery: 8)
        var errors: [Double] = [], sources: [SessionStatus.Source] = [], triggers: [SessionStatus.Trigger?] = []
        for frame in sequence.currentFrames {
            let answer = try session.process(estimator.load(contentsOfFile: sequence.path(of: frame.file)), timestamp: frame.timestamp)
            sources.append(answer.session.source)
            triggers.append(answer.session.trigger)
            #expect(answer.session.ageFrames < 8)
            if let step = answer.session.step, let truth = frame.truthTranslation {
                errors.append(acos(max(-1, min(1, dot(SIMD3(step.vector[0], step.vector[1], step.vector[2]), truth)
                                                / (step.baselines * length(truth))))) * 180 / .pi)
            }
            if let rotation = answer.result?.pose?.rotation, let truth = frame.truthRotation {
                #expect(Matrix3.angleDegrees(between: rotation, and: truth.rotationMatrix) < 10, "\(frame.file): a confident wrong rotation")
            }
        }
        #expect(sources.first == .robust && triggers.first == .start)
        #expect(sources.filter { $0 == .tracked }.count >= sources.count / 2, "\(sources)")
        #expect(sources.filter { $0 == .held || $0 == .sensor }.isEmpty)
        let structure = try #require(session.structure)
        #expect(structure.points.count >= 30)
        #expect(errors.count >= sequence.currentFrames.count - structure.keyframe - 1, "steps on \(errors.count) frames")
        let sorted = errors.sorted()
        #expect(sorted[sorted.count / 2] <= 15, "median step error \(sorted[sorted.count / 2])° of \(errors)")
        #expect(errors.suffix(4).allSatisfy { $0 <= 45 }, "the last frames: \(errors.suffix(4))")
    }

    /// The bundled approach's reference shrunk to 0.7 and its camera unknown: the robust updates' cameras are combined
    /// (the first alone until two hold), and tracked frames get poses on the combination, which they report. It ends
    /// within 3 % of the truth (0.7 f); none is confidently wrong. (The walk above does not serve: straight towards
    /// the reference with no turn, its matches leave the focal length undetermined, ±12 %, and every frame says so.)
    @Test func aSessionOnAnOldPhotoWorksOnItsCombinedCamera() throws {
        let sequence = try FrameSequence.load(from: Fixtures.packageRoot.appendingPathComponent("datasets/synth-approach"))
        let camera = try #require(try sequence.camera())
        let estimator = try PoseEstimator(config: PipelineConfig())
        let full = try estimator.load(contentsOfFile: sequence.path(of: sequence.manifest.reference!))
        let old = try full.resized(width: full.width * 7 / 10, height: full.height * 7 / 10)
        let reference = try estimator.prepareReference(old, camera: nil, cameraUnknown: true)
        let session = GuidanceSession(estimator: estimator, reference: reference, camera: camera)
        var tracked = 0, steps = 0
        for frame in sequence.currentFrames {
            let answer = try session.process(estimator.load(contentsOfFile: sequence.path(of: frame.file)), timestamp: frame.timestamp)
            if answer.session.source == .tracked, answer.result?.pose != nil {
                tracked += 1
                #expect(answer.result?.referenceCamera == session.referenceCamera, "\(frame.file): not the session's camera")
            }
            if answer.session.step != nil { steps += 1 }
            if let rotation = answer.result?.pose?.rotation, let truth = frame.truthRotation {
                #expect(Matrix3.angleDegrees(between: rotation, and: truth.rotationMatrix) < 10, "\(frame.file): a confident wrong rotation")
            }
        }
        let focal = try #require(session.referenceCamera?.fx)
        #expect(abs(focal - 0.7 * camera.fx) / (0.7 * camera.fx) < 0.03, "session camera \(focal) px, truth \(0.7 * camera.fx)")
        #expect(tracked >= sequence.currentFrames.count / 3, "tracked poses on \(tracked) frames")
        #expect(steps > 0, "no step")
    }

    /// An unrelated frame mid-session: tracking loses it, the robust update fails, and the last answer is held with
    /// its age and the reason; the next real frame starts again from a robust update. Without any earlier answer the
    /// sensor guides alone, and without an attitude either the frame fails as a single retake would.
    @Test func aLostFrameIsHeldNotGuessed() throws {
        let sequence = try Self.walk()
        let (session, estimator) = try Self.session(sequence, robustEvery: 100)
        let frames = sequence.currentFrames
        for frame in frames.prefix(3) { _ = try session.process(estimator.load(contentsOfFile: sequence.path(of: frame.file))) }
        let noise = try Image(contentsOfFile: Fixtures.sample("baboon.jpg"), grayscale: true).resized(width: 640, height: 480)
        let held = try session.process(noise)
        #expect(held.session.source == .held)
        #expect(held.session.trigger == .support)
        #expect(held.session.ageFrames == 3)  // frame 0 was the robust update the held answer (frame 2's) rests on
        // Tracking kept too few, and the robust update on the frame found no essential model among the noise's matches.
        #expect(held.evidence == AnswerSource.Evidence(robust: .failed(.noModel), tracking: .tooFew, sensor: false), "\(String(describing: held.evidence))")
        let again = try session.process(estimator.load(contentsOfFile: sequence.path(of: frames[3].file)))
        #expect(again.session.source == .robust && again.session.trigger == .start)

        let (fresh, _) = try Self.session(sequence, robustEvery: 100)
        #expect(throws: RephotoError.self) { try fresh.process(noise) }
        let attitude = try Attitude(quaternion: Quaternion(w: 1, x: 0, y: 0, z: 0))
        let (guided, _) = try Self.session(sequence, robustEvery: 100)
        let withSensor = GuidanceSession(estimator: guided.estimator, reference: guided.reference, camera: guided.camera, referenceAttitude: attitude)
        let sensor = try withSensor.process(noise, attitude: try Attitude(quaternion: Quaternion(axis: SIMD3(0, 1, 0), angle: 0.1)))
        #expect(sensor.session.source == .sensor && sensor.sensorOnly != nil && sensor.result == nil)
    }

    /// A scheduled robust update that fails (here: a ratio test only the reference's own pixels pass in numbers) does not lose
    /// the frame: it is answered from tracking, with the reason, at the homography the frames were warped by, and
    /// the next frame is due another robust update.
    @Test func aFailedScheduledUpdateIsAnsweredFromTracking() throws {
        let image = try Image(contentsOfFile: Fixtures.sample("graf1.png"), grayscale: true)
        var config = PipelineConfig()
        config.session.robustEvery = 2
        // Distance 0 passes; of a warped copy's descriptors a handful do, under the 40 matches asked for.
        config.matching.ratio = 0.01
        config.minimumInliers = 40
        let estimator = try PoseEstimator(config: config)
        let session = GuidanceSession(estimator: estimator, reference: try estimator.prepareReference(image, camera: nil), camera: nil)
        let first = Matrix3(rows: [[1, 0, 3], [0, 1, -2], [0, 0, 1]])
        let second = Matrix3(rows: [[0.9995, -0.03, 8.5], [0.03, 0.9995, -5.2], [1e-5, -1e-5, 1]])
        let start = try session.process(image)
        #expect(start.session.source == .robust && start.session.trigger == .start)
        let between = try session.process(image.warped(by: first, width: image.width, height: image.height))
        #expect(between.session.source == .tracked)
        let due = try session.process(image.warped(by: second, width: image.width, height: image.height))
        #expect(due.session.source == .tracked && due.session.trigger == .schedule, "\(due.session.source) \(String(describing: due.session.trigger)) matches \(due.result?.counts.matches ?? -1) H \(due.result?.counts.inliersHomography ?? -1)")
        // The robust update failed before the pose gate (too few matches), and tracking answered.
        #expect(due.evidence == AnswerSource.Evidence(robust: .failed(nil), tracking: .answered, sensor: false), "\(String(describing: due.evidence))")
        let homography = try #require(due.result).homography
        let corners = [Point2(x: 100, y: 100), Point2(x: 700, y: 100), Point2(x: 700, y: 540), Point2(x: 100, y: 540)]
        let worst = corners.map { homography.project($0).distance(to: second.project($0)) }.max() ?? .infinity
        #expect(worst < 1, "the tracked homography is \(worst) px from the warp at a corner")
        let next = try session.process(image.warped(by: second, width: image.width, height: image.height))
        #expect(next.session.trigger == .schedule && next.session.source == .tracked)
    }

    /// A timestamp that is not a number is bad input; a frame of another size than the last starts tracking afresh.
    @Test func oddFramesAreRefusedOrStartAgain() throws {
        let sequence = try Self.walk()
        let (session, estimator) = try Self.session(sequence, robustEvery: 100)
        let frames = sequence.currentFrames
        let first = try estimator.load(contentsOfFile: sequence.path(of: frames[0].file))
        _ = try session.process(first, timestamp: 0)
        #expect { try session.process(first, timestamp: .nan) } throws: { ($0 as? RephotoError)?.kind == .badInput }
        // The same frame at 0 s was answered: going back in time alone is the bad input.
        #expect { try session.process(first, timestamp: -1) } throws: { ($0 as? RephotoError)?.kind == .badInput }
        let small = try estimator.load(contentsOfFile: sequence.path(of: frames[1].file)).resized(width: 320, height: 240)
        let resized = try session.process(small)
        #expect(resized.session.source == .robust && resized.session.trigger == .resized)
        #expect(resized.result?.currentSize == ImageSize(width: 320, height: 240))
    }

    /// The JSON answer is a retake's document with a `session` object beside its fields.
    @Test func aFramesJSONIsTheRetakeDocumentPlusSession() throws {
        let sequence = try Self.walk()
        let (session, estimator) = try Self.session(sequence, robustEvery: 2)
        var last: SessionFrame?
        for frame in sequence.currentFrames.prefix(4) { last = try session.process(estimator.load(contentsOfFile: sequence.path(of: frame.file)), timestamp: frame.timestamp) }
        let answer = try #require(last)
        let object = try #require(try JSONSerialization.jsonObject(with: JSONOutput.encode(answer)) as? [String: Any])
        #expect(object["schemaVersion"] as? Int == 2)
        for key in ["navigation", "metrics", "pose", "counts", "homography", "warnings", "session"] { #expect(object[key] != nil, "\(key)") }
        let status = try #require(object["session"] as? [String: Any])
        #expect(status["source"] as? String == "tracked")
        #expect(status["ageFrames"] as? Int == 1)
        #expect(abs((status["ageSeconds"] as? Double ?? 0) - 1.0 / 30) < 1e-9)
        #expect(status["step"] != nil && status["converged"] as? Bool != nil && status["hints"] is [String])
        // `actions` beside `hints`: as many, in the same order, each hint its action's text.
        let hints = try #require(status["hints"] as? [String])
        let actions = try JSONDecoder().decode([GuidanceAction].self, from: JSONSerialization.data(withJSONObject: status["actions"] ?? []))
        #expect(!hints.isEmpty && actions.count == hints.count && actions.map(\.text) == hints, "\(hints) \(actions)")
        #expect(actions == answer.session.actions)
    }

    /// The session's actions are the step's first (when determined and not arrived), then the navigation's turns
    /// without its moves (the step replaces them), on every frame of the walk.
    @Test func aSessionsActionsAreTheStepsThenTheTurns() throws {
        let sequence = try Self.walk()
        let (session, estimator) = try Self.session(sequence, robustEvery: 4)
        var stepped = 0
        for frame in sequence.currentFrames {
            let answer = try session.process(estimator.load(contentsOfFile: sequence.path(of: frame.file)), timestamp: frame.timestamp)
            let actions = answer.session.actions
            #expect(answer.session.hints == actions.map(\.text))
            guard let step = answer.session.step, step.determined, let navigation = answer.result?.navigation, !answer.session.converged else { continue }
            stepped += step.actions.isEmpty ? 0 : 1
            #expect(Array(actions.prefix(step.actions.count)) == step.actions, "\(actions)")
            let turns = actions.dropFirst(step.actions.count)
            #expect(turns.allSatisfy { [.turn, .tilt, .roll, .zoom, .findSubject].contains($0.kind) }, "\(actions)")
            #expect(navigation.aligned || turns.map(\.kind) == navigation.actions.filter { [.turn, .tilt, .roll, .zoom, .findSubject].contains($0.kind) }.map(\.kind),
                    "\(actions) vs \(navigation.actions)")
        }
        #expect(stepped > 0, "no frame had a step to take")
    }
}
