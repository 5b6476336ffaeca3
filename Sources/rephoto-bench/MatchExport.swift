// `rephoto-bench export-matches`: the matches rephoto computes for every pair of some sequences, with the
// cameras and the ground truth, and rephoto's own poses on exactly those matches, one JSON object per line.
// scripts/bench-accuracy runs PoseLib and OpenCV on the same matches and prints the table.
import Foundation
import RephotoData
import RephotoKit

enum MatchExport {
    struct Camera: Encodable {
        var K: Matrix3
        var distortion: [Double]
        var width: Int
        var height: Int

        init(_ c: CameraIntrinsics, _ size: ImageSize) {
            (K, distortion, width, height) = (c.matrix, c.distortion, size.width, size.height)
        }
    }

    struct Answer: Encodable {
        var status: String  // "ok" or "failed"
        var reason: String?
        var rotation: Matrix3?
        var translation: [Double]?
        var rotationOnly: Bool
        var milliseconds: Double
        var evidence: PoseEvidence?
        var pureRotation: Matrix3?
        /// The essential-matrix search's own pose before the gate and the model selection (rephoto's answer
        /// comes from it): the estimator alone, answering every pair as PoseLib does. nil: the search found none.
        var searched: Searched?
        /// The reference's camera estimated by rephoto (an old photo's); nil otherwise or when none was.
        var focal: Focal?
    }

    /// An old photo's answer (`referenceIntrinsics: "unknown"`): the estimated focal length, px of the reference file.
    struct Focal: Encodable {
        var fx: Double
        var sigmaPercent: Double
    }

    struct Searched: Encodable {
        var rotation: Matrix3
        var translation: [Double]
    }

    struct Pair: Encodable {
        var set: String
        var pair: String
        var referenceCamera: Camera
        var currentCamera: Camera
        var reference: [[Double]]
        var current: [[Double]]
        var truthRotation: Matrix3
        var truthTranslation: [Double]?
        /// The phone's relative rotation given to "rephoto+sensor": the sequence's attitudes, or (with
        /// --simulated-sensor-degrees D) the truth turned by D° about the reference camera's vertical, the sign
        /// alternating with the seed (a heading error between sessions). nil: that variant did not run.
        var sensorRotations: [Matrix3]?
        var homographyInliers: Int
        /// An old photo (the sequence's referenceCamera is "unknown"): `referenceCamera` is then the row's true one
        /// (gt_reference_*), and `phoneReferenceCamera` the current camera's lens scaled to the reference's longer side
        /// and centred: the old photo taken as if by the phone, as rephoto assumed before issue 40.
        var unknownReference: Bool?
        var phoneReferenceCamera: Camera?
        /// One entry per seed (`pose.seed` = the configured seed + 0, 1, ...): each method's answer on these same matches.
        var runs: [[String: Answer]]
    }

    /// The variants of rephoto measured on every pair: the default, and the estimator before issue 11
    /// (OpenCV RANSAC, 1,000 iterations, confidence 0.999, no gate but the homography's 10 inliers).
    static func variants(_ base: PipelineConfig) -> [(String, PipelineConfig)] {
        var before = base
        before.pose.essential.method = .ransac
        before.pose.essential.maxIterations = 1000
        before.pose.essential.confidence = 0.999
        before.pose.minInliers = 5
        before.pose.maxChance = 1
        before.pose.maxRotationSigma = 180
        before.pose.maxTranslationSigma = 180
        return [("rephoto", base), ("rephoto-opencv-ransac", before)]
    }

    static func run(_ arguments: [String]) throws {
        var sequences: [String] = [], out: String?, maxDimension: Int?? = nil, set: String?, configPath: String?, seeds = 1
        var simulatedSensor: Double?
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            switch flag {
            case "--sequence": sequences.append(try value(&rest, flag))
            case "--out": out = try value(&rest, flag)
            case "--set": set = try value(&rest, flag)
            case "--config": configPath = try value(&rest, flag)
            case "--seeds":
                let text = try value(&rest, flag)
                guard let n = Int(text), (1...100).contains(n) else { throw RephotoError.badInput("--seeds needs 1...100, got \(text)") }
                seeds = n
            case "--simulated-sensor-degrees":
                let text = try value(&rest, flag)
                guard let d = Double(text), d >= 0, d <= 180 else { throw RephotoError.badInput("--simulated-sensor-degrees needs 0...180, got \(text)") }
                simulatedSensor = d
            case "--max-dimension":
                let text = try value(&rest, flag)
                if text == "full" { maxDimension = .some(nil) } else if let n = Int(text), n > 0 { maxDimension = .some(n) } else {
                    throw RephotoError.badInput("--max-dimension needs a positive number or 'full', got \(text)")
                }
            default: throw RephotoError.badInput("unknown argument \(flag) (usage: rephoto-bench export-matches --sequence DIR... --set NAME [--max-dimension N|full] [--config FILE] [--seeds N] [--simulated-sensor-degrees D] --out FILE)")
            }
        }
        guard let out, let set, !sequences.isEmpty else { throw RephotoError.badInput("export-matches needs --sequence, --set and --out") }
        var config = try configPath.map { try PipelineConfig.load(from: $0) } ?? PipelineConfig()
        if let maxDimension { config.features.maxDimension = maxDimension }
        let estimator = try PoseEstimator(config: config)
        guard FileManager.default.createFile(atPath: out, contents: nil) else { throw RephotoError.badInput("cannot create \(out)") }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        defer { try? handle.close() }
        let encoder = JSONOutput.encoder(pretty: false)
        for directory in sequences {
            let sequence = try FrameSequence.load(from: URL(fileURLWithPath: directory))
            guard let camera = try sequence.camera() else { throw RephotoError.badInput("\(directory): no intrinsics") }
            if sequence.referenceCameraUnknown {
                try exportOldPhotos(sequence, set: set, camera: camera, config: config.forReference(kind: .print), seeds: seeds,
                                    handle: handle, encoder: encoder)
                continue
            }
            var references: [String: ReferenceFrame] = [:]
            for frame in sequence.currentFrames {
                guard let truth = frame.truthRotation, let referenceFile = sequence.referenceFile(for: frame) else { continue }
                let reference: ReferenceFrame
                if let cached = references[referenceFile] {
                    reference = cached
                } else {
                    reference = try estimator.prepareReference(try estimator.load(contentsOfFile: sequence.path(of: referenceFile)), camera: camera)
                    references[referenceFile] = reference
                }
                let image = try estimator.load(contentsOfFile: sequence.path(of: frame.file))
                let currentCamera = try camera.adapted(to: image.fullSize)
                let features = try Features(image: image, config: config.features)
                let matched = try Matcher.match(reference: reference.features, current: features, config: config.matching, index: reference.matchIndex)
                // Best first (descriptor distance), as rephoto's PROSAC sees them: every method gets this order.
                let order = matched.matches.indices.sorted { (matched.matches[$0].distance, $0) < (matched.matches[$1].distance, $1) }
                let pairs = matched.reordered(order)
                guard pairs.count >= 5, let referenceCamera = reference.camera else { continue }
                let homography = try HomographyEstimate.estimate(pairs, config: config.homography)
                let path = try sequence.attitudes(for: frame).map { attitudes in
                    try SensorPath.compute(reference: attitudes.reference, current: attitudes.current, referenceSize: reference.size,
                                           currentSize: image.fullSize, referenceCamera: referenceCamera, currentCamera: currentCamera,
                                           config: config.sensor)
                }
                let recorded = path?.rotation
                // The simulated sensor errs about the camera's y axis; a recorded one about the vertical.
                let vertical = simulatedSensor == nil ? path?.referenceVertical : SIMD3(0, -1, 0)
                let sensorRotations = (0..<seeds).map { index -> Matrix3? in
                    guard let degrees = simulatedSensor else { return recorded }
                    let turn = Quaternion(axis: SIMD3(0, 1, 0), angle: (index % 2 == 0 ? 1 : -1) * degrees * .pi / 180).rotationMatrix
                    return truth.rotationMatrix * turn
                }
                // Each seed runs every method on the same matches: the spread over seeds is the search's own luck.
                let runs = try (0..<seeds).map { index -> [String: Answer] in
                    var seeded = config
                    seeded.pose.seed = config.pose.seed &+ index
                    var answers = Dictionary(uniqueKeysWithValues: try variants(seeded).map { name, variant in
                        (name, try answer(name, variant, pairs, referenceCamera, currentCamera, homography))
                    })
                    if let sensor = sensorRotations[index] {
                        answers["rephoto+sensor"] = try answer("rephoto+sensor", seeded, pairs, referenceCamera, currentCamera, homography,
                                                               sensorRotation: sensor, sensorVertical: vertical)
                    }
                    return answers
                }
                let record = Pair(
                    set: set, pair: "\(sequence.manifest.name)/\(referenceFile)->\(frame.file)",
                    referenceCamera: Camera(referenceCamera, reference.size), currentCamera: Camera(currentCamera, image.fullSize),
                    reference: pairs.reference.map { [$0.x, $0.y] }, current: pairs.current.map { [$0.x, $0.y] },
                    truthRotation: truth.rotationMatrix, truthTranslation: frame.truthTranslation.map { [$0.x, $0.y, $0.z] },
                    sensorRotations: sensorRotations.allSatisfy { $0 != nil } ? sensorRotations.compactMap { $0 } : nil,
                    homographyInliers: homography.inlierCount, runs: runs)
                handle.write(try encoder.encode(record))
                handle.write(Data("\n".utf8))
            }
        }
    }

    /// Old photos: the pipeline's matches (at the print's scale, inside its border) are what every method is run on;
    /// "rephoto" is the whole pipeline's answer with the reference's camera unknown (its focal length estimated), and
    /// "rephoto-true-camera" is rephoto's estimator on them given the row's
    /// true reference camera, the bound no user reaches.
    static func exportOldPhotos(_ sequence: FrameSequence, set: String, camera: CameraIntrinsics, config: PipelineConfig, seeds: Int,
                                handle: FileHandle, encoder: JSONEncoder) throws {
        var references: [String: ReferenceFrame] = [:]
        let estimator = try PoseEstimator(config: config)
        func prepared(_ file: String) throws -> ReferenceFrame {
            if let reference = references[file] { return reference }
            let reference = try estimator.prepareReference(try estimator.load(contentsOfFile: sequence.path(of: file)), camera: nil, cameraUnknown: true)
            references[file] = reference
            return reference
        }
        // As rephoto evaluate does: the frames' answers combined into one camera per reference, every frame then on it.
        var shared: [String: EstimatedReferenceCamera] = [:]
        if config.pose.referenceFocal.shareMinFrames > 0 {
            var answers: [(reference: String, frame: String, answer: SharedReferenceCamera.Answer)] = []
            for frame in sequence.currentFrames {
                guard let referenceFile = sequence.referenceFile(for: frame) else { continue }
                let image = try estimator.load(contentsOfFile: sequence.path(of: frame.file))
                guard let result = try? estimator.estimate(reference: try prepared(referenceFile), current: image,
                                                           camera: try camera.adapted(to: image.fullSize)),
                      let answer = estimator.referenceCameraPolicy.answer(result) else { continue }
                answers.append((referenceFile, frame.file, answer))
            }
            shared = estimator.referenceCameraPolicy.combine(byReference: answers)
        }
        for frame in sequence.currentFrames {
            guard let truth = frame.truthRotation, let k = frame.truthReferenceCamera, let referenceFile = sequence.referenceFile(for: frame) else { continue }
            let reference = try prepared(referenceFile)
            let estimating = shared[referenceFile].map(reference.sharing) ?? reference
            let image = try estimator.load(contentsOfFile: sequence.path(of: frame.file))
            let currentCamera = try camera.adapted(to: image.fullSize)
            let trueCamera = CameraIntrinsics(fx: k.x, fy: k.y, cx: k.z, cy: k.w, imageSize: reference.size)
            // The matches the pipeline computes (at the print's scale), whatever it then answers: every method gets them.
            let side = Double(max(reference.features.imageSize.width, reference.features.imageSize.height)) * reference.features.analysisScale
            let features = try Features(image: image, config: config.features.current(image.fullSize, referenceSide: side))
            let matched = try Matcher.match(reference: reference.features, current: features, config: config.matching, index: reference.matchIndex)
            let pairs = matched.reordered(matched.matches.indices.sorted { (matched.matches[$0].distance, $0) < (matched.matches[$1].distance, $1) })
            let homography = pairs.count >= 4 ? try? HomographyEstimate.estimate(pairs, config: config.homography) : nil
            let runs = try (0..<seeds).map { index -> [String: Answer] in
                var seeded = config
                seeded.pose.seed = config.pose.seed &+ index
                let start = ContinuousClock.now
                var answers: [String: Answer] = [:]
                do {
                    let result = try PoseEstimator(config: seeded).estimate(reference: estimating, current: image, camera: currentCamera)
                    let pose = result.pose
                    answers["rephoto"] = Answer(status: pose == nil ? "failed" : "ok", reason: pose == nil ? result.warnings.first : nil,
                                                rotation: pose?.rotation, translation: pose?.translation.map { [$0.x, $0.y, $0.z] },
                                                rotationOnly: pose?.rotationOnly ?? false, milliseconds: milliseconds(ContinuousClock.now - start),
                                                evidence: pose?.evidence, pureRotation: pose?.pureRotation, searched: nil,
                                                focal: result.referenceCamera.map { Focal(fx: $0.fx, sigmaPercent: $0.focalSigmaPercent) })
                } catch let error as RephotoError where error.kind == .estimationFailed {
                    answers["rephoto"] = Answer(status: "failed", reason: error.message, rotation: nil, translation: nil, rotationOnly: false,
                                                milliseconds: milliseconds(ContinuousClock.now - start), evidence: nil, pureRotation: nil, searched: nil)
                }
                if pairs.count >= 5, let homography {
                    answers["rephoto-true-camera"] = try answer("rephoto-true-camera", seeded, pairs, trueCamera, currentCamera, homography)
                }
                return answers
            }
            // The phone's lens over the reference's longer side, centred: an old photo taken as if by the phone.
            let scale = Double(max(reference.size.width, reference.size.height)) / Double(max(image.fullSize.width, image.fullSize.height))
            let phone = CameraIntrinsics(fx: currentCamera.fx * scale, fy: currentCamera.fy * scale, cx: Double(reference.size.width - 1) / 2,
                                         cy: Double(reference.size.height - 1) / 2, imageSize: reference.size)
            let record = Pair(
                set: set, pair: "\(sequence.manifest.name)/\(referenceFile)->\(frame.file)",
                referenceCamera: Camera(trueCamera, reference.size), currentCamera: Camera(currentCamera, image.fullSize),
                reference: pairs.reference.map { [$0.x, $0.y] }, current: pairs.current.map { [$0.x, $0.y] },
                truthRotation: truth.rotationMatrix, truthTranslation: frame.truthTranslation.map { [$0.x, $0.y, $0.z] },
                sensorRotations: nil, homographyInliers: homography?.inlierCount ?? 0, unknownReference: true,
                phoneReferenceCamera: Camera(phone, reference.size), runs: runs)
            handle.write(try encoder.encode(record))
            handle.write(Data("\n".utf8))
        }
    }

    /// One method's answer on one pair, with its time; a refusal is an answer too.
    static func answer(_ name: String, _ variant: PipelineConfig, _ pairs: Correspondences, _ referenceCamera: CameraIntrinsics,
                       _ currentCamera: CameraIntrinsics, _ homography: HomographyEstimate, sensorRotation: Matrix3? = nil,
                       sensorVertical: SIMD3<Double>? = nil) throws -> Answer {
        let start = ContinuousClock.now
        var searched: Searched?
        do {
            if name == "rephoto-opencv-ransac" && homography.inlierCount < variant.minimumInliers {
                throw RephotoError.estimationFailed("too few homography inliers: \(homography.inlierCount)")
            }
            // RelativePose.estimate in its two steps, so that the search's own pose is kept whatever the gate says.
            let search = RelativePose.search(pairs, referenceCamera: referenceCamera, currentCamera: currentCamera,
                                             settings: RelativePose.SearchSettings(variant.pose, pairs: pairs, sensorRotation: sensorRotation,
                                                                                   sensorVertical: sensorVertical))
            if case .success(let found) = search {
                searched = Searched(rotation: Matrix3(found.pose.R), translation: [found.pose.t.0, found.pose.t.1, found.pose.t.2])
            }
            let pose = try RelativePose.decide(search, pairs: pairs, referenceCamera: referenceCamera, currentCamera: currentCamera,
                                               homography: homography, config: variant.pose, sensorRotation: sensorRotation)
            return Answer(status: "ok", reason: pose.warnings.first, rotation: pose.rotation, translation: pose.translation.map { [$0.x, $0.y, $0.z] },
                          rotationOnly: pose.rotationOnly, milliseconds: milliseconds(ContinuousClock.now - start), evidence: pose.evidence,
                          pureRotation: pose.pureRotation, searched: searched)
        } catch let error as RephotoError where error.kind == .estimationFailed {
            return Answer(status: "failed", reason: error.message, rotation: nil, translation: nil, rotationOnly: false,
                          milliseconds: milliseconds(ContinuousClock.now - start), evidence: nil, pureRotation: nil, searched: searched)
        }
    }

    private static func value(_ rest: inout ArraySlice<String>, _ flag: String) throws -> String {
        guard let v = rest.popFirst() else { throw RephotoError.badInput("\(flag) needs a value") }
        return v
    }

    private static func milliseconds(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }
}
