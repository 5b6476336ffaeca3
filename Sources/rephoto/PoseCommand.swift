import ArgumentParser
import Foundation
import RephotoEvaluation
import RephotoKit
import Synchronization

struct PoseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pose",
        abstract: "Homography, navigation, essential-matrix pose and metrics between a reference and a current frame.",
        discussion: "Exit codes: 0 ok, 2 bad input, 3 could not estimate (too few features, matches or inliers), 1 internal error. The --json output is documented in docs/json-output.md.")

    @Option(parsing: .unconditional, help: "The reference (old) photo: JPEG, PNG, HEIC, TIFF, WebP, BMP, PNM or JPEG 2000.")
    var reference: String
    @Option(parsing: .unconditional, help: "The current (new) frame, in any of the reference's formats.")
    var current: String
    @Option(parsing: .unconditional, help: "Camera calibration (OpenCV FileStorage YAML/XML) of the current camera; also used for the reference unless --reference-calibration/--reference-intrinsics is given.")
    var calibration: String?
    // Quaternions and coordinates often start with a minus sign: take the next word as the value unconditionally.
    @Option(parsing: .unconditional, help: "Intrinsics fx,fy,cx,cy in pixels of the full-resolution current frame (instead of --calibration).")
    var intrinsics: String?
    @Option(parsing: .unconditional, help: "Calibration of the reference camera when it differs from the current one.")
    var referenceCalibration: String?
    @Option(parsing: .unconditional, help: "Intrinsics fx,fy,cx,cy of the reference camera when it differs from the current one, or 'unknown' (an old photo): its focal length is then estimated from the matches, with its principal point near its centre (pose.referenceFocal.principalPointSigma).")
    var referenceIntrinsics: String?
    @Option(parsing: .unconditional, help: "What the reference is: photo, or print (an old print: matched with the old-photo treatment whatever is known of its camera). Default: print with --reference-intrinsics unknown, else detected (grey or sepia tones inside a scanned border); the JSON's referenceKind says which and why.")
    var referenceKind: ReferenceKind?
    @Option(parsing: .unconditional, help: "Phone attitude at the reference capture, unit quaternion w,x,y,z (CoreMotion CMAttitude.quaternion, Android rotation vector); with --current-attitude adds the sensor path.")
    var referenceAttitude: String?
    @Option(parsing: .unconditional, help: "Phone attitude at the current capture, w,x,y,z.")
    var currentAttitude: String?
    @Option(parsing: .unconditional, help: "Screen orientation at capture: portrait, portraitUpsideDown, landscapeLeft or landscapeRight (default portrait).")
    var orientation: ScreenOrientation?
    @Option(parsing: .unconditional, help: "Screen orientation of the reference capture when it differs from --orientation.")
    var referenceOrientation: ScreenOrientation?
    @Option(parsing: .unconditional, help: "Reference frame of the attitudes: xArbitraryZVertical (default), xArbitraryCorrectedZVertical, xMagneticNorthZVertical, xTrueNorthZVertical, androidRotationVector, androidGameRotationVector.")
    var attitudeFrame: AttitudeReferenceFrame?
    @Option(parsing: .unconditional, help: "Attitude frame of the reference capture when it differs from --attitude-frame.")
    var referenceAttitudeFrame: AttitudeReferenceFrame?
    @Option(parsing: .unconditional, help: "Points marked by hand where matching fails: a CSV of at least 5 pairs, header reference_x,reference_y,current_x,current_y, full-resolution pixels of each file (docs/json-output.md, \"Marked points\"). They guide a second matching pass and are checked against the pose found; inconsistent ones are refused by number.")
    var points: String?
    @OptionGroup var pipeline: PipelineOptions
    @Flag(help: "Print one JSON object (docs/json-output.md) instead of the summary.")
    var json = false
    @Option(parsing: .unconditional, help: "Write a PNG of the current frame with the target rectangle, navigation quadrilateral and inlier matches.")
    var draw: String?

    func run() throws {
        // Probe: --draw on the reference replaced the photo with the drawing, exit 0.
        if let draw {
            try OutputPaths.checkFile(draw, apartFrom: [reference, current] + [calibration, referenceCalibration, pipeline.config, points].compactMap { $0 }, option: "--draw")
            // As align's --out: PNG data under a .gif name was written with exit 0.
            let lower = draw.lowercased()
            guard lower.hasSuffix(".png") || lower.hasSuffix(".jpg") || lower.hasSuffix(".jpeg") else {
                throw RephotoError.badInput("--draw \(draw) must end in .jpg, .jpeg or .png")
            }
        }
        let referenceUnknown = referenceIntrinsics.map(CameraIntrinsics.namesUnknown) ?? false
        let resolved = try pipeline.resolve()
        let kind = try ReferenceKindEvidence.resolve(referenceKind, cameraUnknown: referenceUnknown,
                                                     image: try Image(contentsOfFile: reference, maxPixels: resolved.maxPixels,
                                                                               maxBytes: resolved.maxBytes, reducedFor: resolved.features))
        let settings = resolved.forReference(kind: kind.kind)
        let estimator = try PoseEstimator(config: settings)

        let currentCamera = try camera(calibration, intrinsics, role: "")
        if referenceUnknown, referenceCalibration != nil {
            throw RephotoError.badInput("give either --reference-calibration or --reference-intrinsics unknown, not both")
        }
        if referenceUnknown, currentCamera == nil {
            throw RephotoError.badInput("--reference-intrinsics unknown needs the current camera (--calibration or --intrinsics) to estimate the reference's from")
        }
        let referenceCamera = referenceUnknown ? nil : try camera(referenceCalibration, referenceIntrinsics, role: "reference-") ?? currentCamera

        let attitudes = try attitudePair()
        let marks = try points.map { try MarkedPoints.read($0) }

        // Estimation decodes straight to grey, as `rephoto evaluate` does, so both give identical answers. The photos
        // are independent until matching, so each side decodes its own; the current one's features are detected while
        // the reference is prepared when no reference, however small, could change the scale they are detected at
        // (features.currentScaleToReference); otherwise that detection could be wasted, and waits for the reference.
        struct Side { var image: Result<Image, Error>?; var milliseconds = 0.0 }
        let sides = Mutex<(reference: Side, current: Side, prepared: Result<ReferenceFrame, Error>?, features: Result<Features, Error>?)>(
            (Side(), Side(), nil, nil))
        DispatchQueue.concurrentPerform(iterations: 2) { side in
            let start = ContinuousClock.now
            if side == 0 {
                let image = Result { try estimator.load(contentsOfFile: reference) }
                let loaded = milliseconds(since: start)
                let prepared = image.flatMap { image in
                    Result { try estimator.prepareReference(image, camera: referenceCamera, cameraUnknown: referenceUnknown, kind: kind) }
                }
                sides.withLock { $0.reference = Side(image: image, milliseconds: loaded); $0.prepared = prepared }
            } else {
                let image = Result { try estimator.load(contentsOfFile: current) }
                let loaded = milliseconds(since: start)
                var features: Result<Features, Error>?
                if case .success(let image) = image, settings.features.current(image.fullSize, referenceSide: 0) == settings.features {
                    features = Result { try Features(image: image, config: settings.features) }
                }
                sides.withLock { $0.current = Side(image: image, milliseconds: loaded); $0.features = features }
            }
        }
        let (loadedReference, loadedCurrent, preparing, detecting) = sides.withLock { ($0.reference, $0.current, $0.prepared!, $0.features) }
        // The reference's error comes first, as when the two were read one after the other.
        _ = try loadedReference.image!.get()
        let currentImage = try loadedCurrent.image!.get()
        let prepared = try preparing.get()
        var result: PoseResult
        let currentFeatures = try detecting?.get()
        // A failure is when a person most wants to see the matches: --draw draws the tentative ones and says why.
        func drawFailure(_ error: RephotoError) {
            guard let draw else { return }
            let matches = try? Matcher.match(reference: prepared.features, current: currentFeatures ?? Features(image: currentImage, config: settings.features),
                                             config: settings.matching, index: prepared.matchIndex)
            do {
                let picture = try NavigationOverlay.drawFailure(on: Image(contentsOfFile: current, maxPixels: settings.maxPixels, maxBytes: settings.maxBytes),
                                                                matches: matches, reason: error.message)
                let lower = draw.lowercased()
                try picture.write(to: draw, format: lower.hasSuffix(".jpg") || lower.hasSuffix(".jpeg") ? .jpeg(quality: 92) : .png)
            } catch {
                CLIOutput.message("warning: --draw \(draw): the failure could not be drawn (\(error))")
            }
        }
        let answer: RetakeAnswer
        do {
            answer = try estimator.answer(reference: prepared, current: currentImage, currentFeatures: currentFeatures, camera: currentCamera,
                                          attitudes: attitudes, marks: marks)
        } catch let error as RephotoError where error.kind == .estimationFailed {
            drawFailure(error)
            throw error
        }
        switch answer {
        case .vision(let answered):
            result = answered
        case .sensorOnly(let sensorOnly, let failure):
            // Too little signal in the images: the sensor path still says where to point; exit code stays 3.
            drawFailure(failure)
            if json { try CLIOutput.printJSON(sensorOnly) } else { print(HumanSummary.text(sensorOnly)) }
            CLIOutput.message(failure.message)
            throw ExitCode(failure.exitCode)
        }
        result.timings.loadReference = loadedReference.milliseconds
        result.timings.loadCurrent = loadedCurrent.milliseconds
        result.timings.total += loadedCurrent.milliseconds

        if let draw {
            let overlay = try NavigationOverlay.draw(on: Image(contentsOfFile: current, maxPixels: settings.maxPixels, maxBytes: settings.maxBytes), result: result)
            let lower = draw.lowercased()
            try overlay.write(to: draw, format: lower.hasSuffix(".jpg") || lower.hasSuffix(".jpeg") ? .jpeg(quality: 92) : .png)
        }
        if json {
            try CLIOutput.printJSON(result)
        } else {
            print(HumanSummary.text(result, reference: reference, current: current, detector: settings.features.detector))
        }
    }

    private func attitudePair() throws -> AttitudePair? {
        switch (referenceAttitude, currentAttitude) {
        case (nil, nil):
            // Options that describe attitudes say nothing without them: a silent no-op would hide a mistake.
            let unused = [("--orientation", orientation != nil), ("--reference-orientation", referenceOrientation != nil),
                          ("--attitude-frame", attitudeFrame != nil), ("--reference-attitude-frame", referenceAttitudeFrame != nil)]
                .filter(\.1).map(\.0)
            if !unused.isEmpty {
                throw RephotoError.badInput("\(unused.joined(separator: ", ")) describe attitudes: give --reference-attitude and --current-attitude too")
            }
            return nil
        case (let reference?, let current?):
            let frame = attitudeFrame ?? .xArbitraryZVertical, orientation = orientation ?? .portrait
            return AttitudePair(
                reference: try Attitude(parsing: reference, frame: referenceAttitudeFrame ?? frame,
                                        orientation: referenceOrientation ?? orientation),
                current: try Attitude(parsing: current, frame: frame, orientation: orientation))
        default:
            throw RephotoError.badInput("give both --reference-attitude and --current-attitude, or neither")
        }
    }

    private func camera(_ file: String?, _ text: String?, role: String) throws -> CameraIntrinsics? {
        switch (file, text) {
        case (let file?, nil): return try CameraIntrinsics.load(from: file)
        case (nil, let text?):
            do {
                return try CameraIntrinsics(parsing: text)
            } catch let error as RephotoError where error.kind == .badInput {
                // Which option, and for the reference what else it takes.
                throw RephotoError.badInput("--\(role)intrinsics: \(error.message)\(role.isEmpty ? "" : ", or unknown (an old photo whose camera nobody knows)")")
            }
        case (nil, nil): return nil
        case (.some, .some): throw RephotoError.badInput("give either --\(role)calibration or --\(role)intrinsics, not both")
        }
    }
}

