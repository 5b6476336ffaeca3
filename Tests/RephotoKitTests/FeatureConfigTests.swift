import RephotoTestSupport
import Foundation
import Testing
import Yams
@testable import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation

@Suite struct FeatureConfigTests {
    /// The bundled synthetic reference faded into a print (by default contrast 0.3, blur 1 px, grain 3; blacks lifted), a
    /// frame of today, their camera and the frame's true rotation.
    func fadedPrint(contrast: Double = 0.3, blur: Double = 1, noise: Double = 3) throws -> (faded: Image, current: Image, camera: CameraIntrinsics, truth: Matrix3) {
        let sequence = Fixtures.packageRoot.appendingPathComponent("datasets/synth-approach")
        let faded = try Image(contentsOfFile: sequence.appendingPathComponent("reference.jpg").path, grayscale: true)
            .adjusted(contrast: contrast, brightness: 90, blur: blur, noise: noise, seed: 5)
        let current = try Image(contentsOfFile: sequence.appendingPathComponent("frame-0000.jpg").path, grayscale: true)
        let camera = CameraIntrinsics(fx: 391.6444049109095, fy: 391.6444049109095, cx: 239.5, cy: 179.5)
        let truth = try #require(try FrameSequence.load(from: sequence).frames.first { $0.file == "frame-0000.jpg" }?.truth.rotation)
        return (faded, current, camera, truth)
    }

    /// A faded print (contrast 0.3, lifted blacks, blur, grain) of the bundled synthetic reference against a frame of
    /// today: equalising contrast before detection (features.clahe 3) finds far more homography inliers, and the pose
    /// against the truth in frames.csv stays within 1°.
    @Test func equalisingAFadedPrintFindsMoreInliers() throws {
        let (faded, current, camera, truth) = try fadedPrint()
        var inliers: [Double: Int] = [:]
        for clip in [0.0, 3] {
            var config = PipelineConfig()
            config.features.clahe = clip
            let result = try PoseEstimator(config: config).estimate(reference: faded, current: current, camera: camera)
            inliers[clip] = result.counts.inliersHomography
            if clip > 0 {
                let pose = try #require(result.pose)
                #expect(GroundTruthErrors.rotationError(estimate: pose.rotation, truth: truth) < 1)
            }
        }
        #expect(Double(inliers[3] ?? 0) > 1.5 * Double(inliers[0] ?? 0), "\(inliers)")
    }

    /// An old photo and its frames are detected at features.oldPhotoThresholdScale (0.3) times the AKAZE threshold and
    /// SIFT's contrast threshold, ORB untouched: on the faded print above (its CLAHE as an old photo's), that finds more
    /// keypoints on the print and more homography inliers, the pose still within 1° of the truth.
    @Test func anOldPhotoIsDetectedAtALowerThreshold() throws {
        let adjusted = PipelineConfig().forReference(kind: .print).features
        #expect(abs(adjusted.akaze.threshold - 0.0003) < 1e-12 && abs(adjusted.sift.contrastThreshold - 0.012) < 1e-12)
        #expect(adjusted.orb == FeatureConfig().orb && adjusted.clahe == 3)
        var unscaled = PipelineConfig()
        unscaled.features.oldPhotoThresholdScale = 1
        #expect(unscaled.forReference(kind: .print).features.akaze.threshold == FeatureConfig().akaze.threshold)

        let (faded, current, camera, truth) = try fadedPrint()
        var found: [Double: (keypoints: Int, inliers: Int)] = [:]
        for scale in [1.0, 0.3] {
            var config = PipelineConfig()
            config.features.oldPhotoThresholdScale = scale
            let result = try PoseEstimator(config: config.forReference(kind: .print)).estimate(reference: faded, current: current, camera: camera)
            found[scale] = (result.counts.keypointsReference, result.counts.inliersHomography)
            let pose = try #require(result.pose)
            #expect(GroundTruthErrors.rotationError(estimate: pose.rotation, truth: truth) < 1)
        }
        let before = try #require(found[1]), after = try #require(found[0.3])
        #expect(after.keypoints > before.keypoints && after.inliers > before.inliers, "\(found)")
    }

    /// An old photo and its frames are described upright (features.oldPhotoUpright): MLDB and KAZE lose their
    /// orientation, photos of today keep it. On a harsher print of the bundled reference (contrast 0.25, blur 2 px, grain
    /// 12) that finds more homography inliers than the oriented descriptors, the pose within 1° of the truth.
    @Test func anOldPhotoIsDescribedUpright() throws {
        #expect(PipelineConfig().forReference(kind: .print).features.akaze.descriptorType == .mldbUpright)
        #expect(PipelineConfig().forReference(kind: .photo).features.akaze.descriptorType == .mldb)
        var kaze = PipelineConfig()
        kaze.features.akaze.descriptorType = .kaze
        #expect(kaze.forReference(kind: .print).features.akaze.descriptorType == .kazeUpright)
        var oriented = PipelineConfig()
        oriented.features.oldPhotoUpright = false
        #expect(oriented.forReference(kind: .print).features.akaze.descriptorType == .mldb)

        let (faded, current, camera, truth) = try fadedPrint(contrast: 0.25, blur: 2, noise: 12)
        var inliers: [Bool: Int] = [:]
        for upright in [false, true] {
            var config = PipelineConfig()
            config.features.oldPhotoUpright = upright
            let result = try PoseEstimator(config: config.forReference(kind: .print)).estimate(reference: faded, current: current, camera: camera)
            inliers[upright] = result.counts.inliersHomography
            if upright {
                let pose = try #require(result.pose)
                #expect(GroundTruthErrors.rotationError(estimate: pose.rotation, truth: truth) < 1)
            }
        }
        #expect(Double(inliers[true] ?? 0) > 1.2 * Double(inliers[false] ?? 0), "\(inliers)")
    }

    /// A small reference caps the current frame's analysis size at 1.3 times its own, never below 1,000 px; a reference
    /// as large as the frame changes nothing, nor does 0. Detection then runs at that size: its keypoints' scale says so.
    @Test func aSmallReferenceIsMetAtItsOwnScale() throws {
        let config = FeatureConfig()
        let frame = ImageSize(width: 3072, height: 2048)
        #expect(config.current(frame, referenceSide: 900).maxDimension == 1170)
        #expect(config.current(frame, referenceSide: 500).maxDimension == 1000)
        #expect(config.current(frame, referenceSide: 1600) == config)
        #expect(config.current(ImageSize(width: 800, height: 640), referenceSide: 400) == config)
        var off = config
        off.currentScaleToReference = 0
        #expect(off.current(frame, referenceSide: 900) == off)
        var scaled = config
        scaled.scale = 0.25  // 768 px analysed: under the cap already
        #expect(scaled.current(frame, referenceSide: 900) == scaled)

        let image = try Fixtures.image("graf3.png").resized(width: 1600, height: 1280)
        let reference = try Fixtures.image("graf1.png").resized(width: 800, height: 640)
        let estimator = try PoseEstimator(config: PipelineConfig())
        let result = try estimator.estimate(reference: try estimator.prepareReference(reference, camera: nil), current: image, camera: nil)
        let full = try Features(image: image, config: config)
        let capped = try Features(image: image, config: config.current(image.fullSize, referenceSide: 800))
        #expect(abs(capped.analysisScale - 1040.0 / 1600) < 1e-6 && full.analysisScale == 1)
        #expect(result.counts.keypointsCurrent == capped.count && capped.count != full.count)
    }

    /// The defaults are OpenCV 4.6's own (features2d.hpp): a config of `{}` must reproduce them.
    @Test func emptyConfigGivesOpenCVDefaults() throws {
        let config = try JSONDecoder().decode(PipelineConfig.self, from: Data("{}".utf8))
        let a = config.features.akaze, o = config.features.orb, s = config.features.sift
        #expect(config.features.detector == .akaze)
        #expect(a.descriptorType == .mldb && a.descriptorSize == 0 && a.descriptorChannels == 3)
        #expect(a.threshold == 0.001 && a.octaves == 4 && a.octaveLayers == 4 && a.diffusivity == .pmG2)
        #expect(o.features == 500 && o.scaleFactor == 1.2 && o.levels == 8 && o.edgeThreshold == 31 && o.firstLevel == 0)
        #expect(o.wtaK == 2 && o.scoreType == .harris && o.patchSize == 31 && o.fastThreshold == 20)
        #expect(s.features == 0 && s.octaveLayers == 3 && s.contrastThreshold == 0.04 && s.edgeThreshold == 10 && s.sigma == 1.6)
        #expect(config.homography == RobustConfig(method: .usacMagsac, threshold: 3, confidence: 0.995, maxIterations: 2000))
        #expect(config.pose.essential == RobustConfig(method: .loMsac, threshold: 1, confidence: 0.9999, maxIterations: 20_000))
        #expect(config == PipelineConfig())
    }

    @Test func yamlAndJSONSetNestedParametersAndKeepOtherDefaults() throws {
        let yaml = """
            features:
              detector: orb
              maxDimension: 800
              orb: {features: 1500, scoreType: fast}
            matching: {ratio: 0.7, mutual: true, matcher: flann}
            homography: {method: usac_magsac, threshold: 2.5}
            pose:
              essential: {method: usac_accurate}
              maxTranslationSigma: 0.5
            """
        let path = try Fixtures.temporaryFile("config.yml", Data(yaml.utf8))
        let config = try PipelineConfig.load(from: path)
        #expect(config.features.detector == .orb && config.features.maxDimension == 800)
        #expect(config.features.orb.features == 1500 && config.features.orb.scoreType == .fast && config.features.orb.levels == 8)
        #expect(config.matching.ratio == 0.7 && config.matching.mutual && config.matching.matcher == .flann)
        #expect(config.homography.method == .usacMagsac && config.homography.threshold == 2.5 && config.homography.confidence == 0.995)
        #expect(config.pose.essential.method == .usacAccurate && config.pose.essential.threshold == 1)
        #expect(config.pose.maxTranslationSigma == 0.5 && config.pose.minInliers == 10)

        // The same config through JSON, after a round trip through the encoder.
        let json = try JSONEncoder().encode(config)
        let back = try JSONDecoder().decode(PipelineConfig.self, from: json)
        #expect(back == config)
        let yamlBack = try YAMLDecoder().decode(PipelineConfig.self, from: try YAMLEncoder().encode(config))
        #expect(yamlBack == config)
    }

    @Test func misspeltKeyIsAnErrorNamingIt() throws {
        let path = try Fixtures.temporaryFile("bad.json", Data(#"{"features": {"akaze": {"treshold": 0.002}}}"#.utf8))
        let error = #expect(throws: RephotoError.self) { try PipelineConfig.load(from: path) }
        #expect(error?.kind == .badInput)
        #expect(error?.message.contains("at 'features.akaze.treshold': unknown key 'treshold'") == true, "\(error?.message ?? "")")
    }

    @Test(arguments: [
        (#"{"features": {"detector": "orb", "orb": {"scaleFactor": 0.9}}}"#, "orb.scaleFactor = 0.9 is out of range"),
        (#"{"features": {"scale": 1.5}}"#, "features.scale = 1.5 is out of range"),
        (#"{"matching": {"ratio": 0}}"#, "matching.ratio = 0 is out of range"),
        (#"{"pose": {"essential": {"method": "rho"}}}"#, "pose.essential.method = rho is out of range"),
        (#"{"homography": {"confidence": 1.5}}"#, "homography.confidence = 1.5 is out of range"),
        // A tolerance wide enough for wrong models (9° or more off) to be corroborated: 180 passed one 45° wrong.
        (#"{"pose": {"maxSensorDisagreement": 30}}"#, "pose.maxSensorDisagreement = 30 is out of range (allowed: [0, 15])"),
        (#"{"features": {"detector": "surf"}}"#, "features.detector"),
        (#"{"sensor": {"cameraFromDevice": [[1, 0, 0], [0, 1, 0], [0, 0, 2]]}}"#, "sensor.cameraFromDevice"),
        (#"{"sensor": {"cameraFromDevice": [[1, 0, 0], [0, 1, 0], [0, 0, -1]]}}"#, "sensor.cameraFromDevice = [[1, 0, 0], [0, 1, 0], [0, 0, -1]] is out of range (allowed: a rotation matrix)"),
    ])
    func outOfRangeValuesAreRefusedByName(json: String, expected: String) throws {
        let path = try Fixtures.temporaryFile("c.json", Data(json.utf8))
        let error = #expect(throws: RephotoError.self) { try PipelineConfig.load(from: path) }
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
    }

    /// The keypoint cap keeps the strongest responses of the uncapped detection, in detection order, each
    /// with its own descriptor: checked against a detection without the cap, for a binary and a float descriptor.
    @Test func keypointCapKeepsTheStrongestWithTheirDescriptors() throws {
        let image = try Fixtures.image("graf1.png")
        for detector in [DetectorKind.akaze, .sift] {
            var config = FeatureConfig(detector: detector)
            config.maxKeypoints = 0
            let all = try Features(image: image, config: config)
            let limit = all.count / 3
            #expect(limit > 100, "\(detector): \(all.count) keypoints")
            config.maxKeypoints = limit
            let capped = try Features(image: image, config: config)
            #expect(capped.count == limit, "\(detector)")
            let threshold = all.keypoints.map(\.response).sorted(by: >)[limit - 1]
            #expect(capped.keypoints.allSatisfy { $0.response >= threshold }, "\(detector)")
            // In detection order: the kept keypoints are a subsequence of the uncapped ones.
            var next = 0
            var rows: [Int] = []
            for keypoint in capped.keypoints {
                guard let k = all.keypoints[next...].firstIndex(of: keypoint) else { break }
                rows.append(k)
                next = k + 1
            }
            #expect(rows.count == limit, "\(detector): not in detection order")
            // Descriptor rows end the saved form.
            let width = all.descriptorBytes
            let allRows = try all.serialized().suffix(all.count * width), cappedRows = try capped.serialized().suffix(limit * width)
            #expect(capped.descriptorBytes == width)
            for (i, k) in rows.enumerated() {
                #expect(cappedRows.dropFirst(i * width).prefix(width).elementsEqual(allRows.dropFirst(k * width).prefix(width)), "\(detector): descriptor \(i)")
            }
            // A cap above the count changes nothing.
            config.maxKeypoints = all.count
            #expect(try Features(image: image, config: config).keypoints == all.keypoints)
        }
    }

    /// Parameters must reach OpenCV: each changes what the detector returns in the documented direction.
    @Test func parametersReachOpenCV() throws {
        let image = try Fixtures.image("graf1.png")
        var orb = FeatureConfig(detector: .orb)
        orb.orb.features = 100
        #expect(try Features(image: image, config: orb).count <= 100)
        orb.orb.features = 2000
        #expect(try Features(image: image, config: orb).count > 1000)

        var akaze = FeatureConfig(detector: .akaze)
        let many = try Features(image: image, config: akaze).count
        akaze.akaze.threshold = 0.01
        let few = try Features(image: image, config: akaze).count
        #expect(few < many / 3)
        akaze.akaze.descriptorSize = 256
        #expect(try Features(image: image, config: akaze).descriptorBytes == 32)

        var sift = FeatureConfig(detector: .sift)
        sift.sift.features = 50
        let s = try Features(image: image, config: sift)
        #expect(s.count >= 45 && s.count <= 55 && !s.isBinary && s.descriptorBytes == 128 * 4)
        sift.sift.descriptorType = .uint8
        #expect(try Features(image: image, config: sift).descriptorBytes == 128)
    }

    /// Detecting on a downscaled copy must report full-resolution coordinates: detect on an image and on
    /// its 2x enlargement analysed at scale 0.5 (which restores the original), and compare positions.
    @Test func analysisScaleReportsFullResolutionCoordinates() throws {
        let original = try Fixtures.image("Blender_Suzanne1.jpg").grayscale()
        let doubled = try original.resized(width: original.width * 2, height: original.height * 2)
        let base = try Features(image: original, config: FeatureConfig(detector: .akaze))
        let scaled = try Features(image: doubled, config: FeatureConfig(detector: .akaze, scale: 0.5))
        #expect(scaled.analysisScale == 0.5)
        let viaMaxDimension = try Features(image: doubled, config: FeatureConfig(detector: .akaze, maxDimension: 640))
        #expect(viaMaxDimension.analysisScale == 0.5)
        var found = 0
        for k in base.keypoints {
            let expected = Point2(x: (k.x + 0.5) * 2 - 0.5, y: (k.y + 0.5) * 2 - 0.5)
            if scaled.keypoints.contains(where: { $0.point.distance(to: expected) < 1.5 }) { found += 1 }
        }
        #expect(Double(found) > 0.8 * Double(base.count), "\(found) of \(base.count)")
    }

    @Test func maskKeepsFeaturesInsideIt() throws {
        let image = try Fixtures.image("graf1.png")
        var pixels = [UInt8](repeating: 0, count: image.width * image.height)
        for y in 0..<image.height { for x in 0..<(image.width / 2) { pixels[y * image.width + x] = 255 } }
        let mask = try Image(width: image.width, height: image.height, channels: 1, pixels: pixels)
        let features = try Features(image: image, config: FeatureConfig(), mask: mask)
        #expect(features.count > 100)
        #expect(features.keypoints.allSatisfy { $0.x < Double(image.width / 2) })
        let wrong = try Image(width: 10, height: 10, channels: 1, pixels: [UInt8](repeating: 255, count: 100))
        #expect(throws: RephotoError.self) { try Features(image: image, config: FeatureConfig(), mask: wrong) }
    }
}
