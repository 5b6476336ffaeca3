import RephotoKit
import RephotoData
import ArgumentParser
import Foundation

/// Settings of a generated rephotography sequence: what a person retaking a photo would record, with
/// exact ground truth. These are `rephoto synth`'s options, declared once here (datasets/README.md);
/// `SyntheticSequenceOptions.defaults` is the default set for code.
public struct SyntheticSequenceOptions: ParsableArguments, Sendable {
    @Option(parsing: .unconditional, help: "Sequence name.") public var name = "synthetic"
    @Option(parsing: .unconditional, help: "Number of frames (2...300).") public var frames = 60
    @Option(parsing: .unconditional, help: "Frames per second (timestamps).") public var fps = 30.0
    @Option(parsing: .unconditional, help: "Frame width, pixels.") public var width = 640
    @Option(parsing: .unconditional, help: "Frame height, pixels.") public var height = 480
    /// A phone's main camera: about 60–70°.
    @Option(name: .customLong("field-of-view"), parsing: .unconditional, help: "Horizontal field of view, degrees.") public var fieldOfViewDegrees = 63.0
    @Option(parsing: .unconditional, help: "Random seed.") public var seed: UInt64 = 1
    @Option(name: .customLong("start-rotation"), parsing: .unconditional, help: "Start offset: rotation, degrees.") public var startRotationDegrees = 8.0
    @Option(name: .customLong("start-translation"), parsing: .unconditional, help: "Start offset: camera displacement, metres.") public var startTranslationMetres = 0.5
    /// Exponential convergence: the offset left at the last frame is exp(−convergence).
    @Option(parsing: .unconditional, help: "Convergence: the start offset decays as exp(-c * progress).") public var convergence = 5.0
    @Option(name: .customLong("orbit"), parsing: .unconditional, help: "Wide baseline: the start camera orbits the scene's centre (7.5 m ahead) by this many degrees about the vertical, facing it; replaces the start rotation and translation.")
    public var orbitDegrees = 0.0
    /// Physiological tremor about 8–12 Hz plus slower sway.
    @Option(parsing: .unconditional, help: "Hand tremor: rotation amplitude, degrees.") public var tremorDegrees = 0.1
    @Option(parsing: .unconditional, help: "Hand tremor: displacement amplitude, metres.") public var tremorMetres = 0.002
    // Signed values: a minus sign starts the value, not another option.
    @Option(name: .customLong("heading"), parsing: .unconditional, help: "Heading of the reference camera, degrees east of north.") public var headingDegrees = 0.0
    @Option(parsing: .unconditional, help: "How the phone is held: portrait, portraitUpsideDown, landscapeLeft, landscapeRight.")
    public var orientation = ScreenOrientation.landscapeLeft
    @Option(parsing: .unconditional, help: "Attitude reference frame written to the manifest.") public var attitudeFrame = AttitudeReferenceFrame.xMagneticNorthZVertical
    @Option(parsing: .unconditional, help: "Attitude white noise per axis, degrees.") public var attitudeNoise = 0.05
    @Option(parsing: .unconditional, help: "Gyro-bias drift, degrees per second.") public var attitudeDrift = 0.02
    @Option(parsing: .unconditional, help: "Heading offset of the current session, degrees.") public var yawOffset = 3.0
    @Option(parsing: .unconditional, help: "Then: reference contrast factor.") public var referenceContrast = 1.0
    @Option(parsing: .unconditional, help: "Then: reference brightness offset, grey levels.") public var referenceBrightness = 0.0
    @Option(parsing: .unconditional, help: "Then: reference blur, Gaussian sigma in pixels.") public var referenceBlur = 0.0
    @Option(parsing: .unconditional, help: "Sensor noise on every frame, grey levels (sigma).") public var imageNoise = 0.0
    @Flag(help: "Now: an object stands in front of the scene in the current frames.") public var occluder = false
    @Flag(help: "Now: part of the back wall has changed in the current frames.") public var replacedRegion = false
    @Option(parsing: .unconditional, help: "JPEG quality of the frames.") public var jpegQuality = 90

    public init() {}

    /// The defaults, for code (an unparsed ParsableArguments value cannot be read).
    public static var defaults: SyntheticSequenceOptions {
        // Parsing no arguments cannot fail: every option has a default and the defaults validate.
        try! parse([])
    }

    /// The attitude error model of the current session.
    public var attitude: AttitudeNoiseModel {
        get { AttitudeNoiseModel(noiseDegrees: attitudeNoise, driftDegreesPerSecond: attitudeDrift, yawOffsetDegrees: yawOffset) }
        set {
            attitudeNoise = newValue.noiseDegrees
            attitudeDrift = newValue.driftDegreesPerSecond
            yawOffset = newValue.yawOffsetDegrees
        }
    }

    public func validate() throws {
        try require((2...300).contains(frames), "frames", frames, "2...300")
        try require(fps > 0 && fps.isFinite, "fps", fps, "> 0")
        try require((64...4096).contains(width) && (64...4096).contains(height), "size", "\(width)x\(height)", "64...4096 per side")
        try require(fieldOfViewDegrees > 10 && fieldOfViewDegrees < 150, "field of view", fieldOfViewDegrees, "10...150 degrees")
        try require(startRotationDegrees >= 0 && startRotationDegrees <= 45, "start rotation", startRotationDegrees, "0...45 degrees")
        try require(startTranslationMetres >= 0 && startTranslationMetres <= 3, "start translation", startTranslationMetres, "0...3 metres")
        try require(orbitDegrees >= 0 && orbitDegrees <= 90, "orbit", orbitDegrees, "0...90 degrees")
        try require(convergence >= 0 && convergence.isFinite, "convergence", convergence, ">= 0")
        // Upper bounds too: past them the truth overflowed to NaN or OpenCV refused the blur (found by probing).
        try require(abs(headingDegrees) <= 360, "heading", headingDegrees, "-360...360 degrees")
        try require(tremorDegrees >= 0 && tremorDegrees <= 10 && tremorMetres >= 0 && tremorMetres <= 1, "tremor",
                    "\(tremorDegrees)°, \(tremorMetres) m", "0...10 degrees and 0...1 metre")
        try require(referenceContrast >= 0 && referenceContrast <= 10 && referenceBlur >= 0 && referenceBlur <= 100
                    && imageNoise >= 0 && imageNoise <= 255 && abs(referenceBrightness) <= 255, "image changes",
                    "contrast \(referenceContrast), brightness \(referenceBrightness), blur \(referenceBlur), noise \(imageNoise)",
                    "contrast 0...10, brightness -255...255, blur 0...100 px, noise 0...255")
        try require((1...100).contains(jpegQuality), "jpeg quality", jpegQuality, "1...100")
        try attitude.validate()
    }

    public var camera: CameraIntrinsics {
        let f = Double(width) / 2 / tan(fieldOfViewDegrees * .pi / 360)
        return CameraIntrinsics(fx: f, fy: f, cx: Double(width - 1) / 2, cy: Double(height - 1) / 2)
    }
}

/// Renders a synthetic sequence (SyntheticScene.threePlanes, exact per-pixel ray casting) and writes it in
/// the sequence format: `reference.jpg`, `frame-NNNN.jpg`, `sequence.json`, `frames.csv` with ground truth
/// and simulated phone attitudes. Identical output for identical options and seed.
public enum SyntheticSequence {
    public static func generate(_ options: SyntheticSequenceOptions, textureDirectory: String, to directory: URL,
                                progress: ((Int, Int) -> Void)? = nil) throws -> FrameSequence {
        try options.validate()
        var random = SeededRandom(seed: options.seed)
        let camera = options.camera
        let size = ImageSize(width: options.width, height: options.height)
        let scene = try SyntheticScene.threePlanes(textureDirectory: textureDirectory)
        var now = scene
        if options.replacedRegion {
            let wall = scene[0].texture
            let patch = try Image(contentsOfFile: "\(textureDirectory)/home.jpg").resized(width: wall.width / 4, height: wall.height / 4)
            now[0].texture = try wall.pasting(patch, x: wall.width * 3 / 8, y: wall.height / 3)
        }
        if options.occluder {
            now.append(TexturedPlane(texture: try Image(contentsOfFile: "\(textureDirectory)/fruits.jpg"), centre: SIMD3(0.7, 0.35, 3.2),
                                     right: SIMD3(1, 0, 0), down: SIMD3(0, 1, 0), width: 0.8))
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)

        // The reference: "then", possibly with an old photo's contrast, brightness and blur.
        let reference = try SceneRenderer.render(scene, camera: camera, size: size, background: 40)
            .adjusted(contrast: options.referenceContrast, brightness: options.referenceBrightness, blur: options.referenceBlur,
                      noise: options.imageNoise, seed: random.next())
        try reference.write(to: directory.appendingPathComponent("reference.jpg").path, format: .jpeg(quality: options.jpegQuality))

        // Trajectory: start offset, exponential convergence, hand tremor.
        let startAxis = random.unitVector()
        var lateral = random.unitVector()
        lateral.z *= 0.3  // people step sideways and up/down more than forwards
        let startCentre = lateral / length(lateral) * options.startTranslationMetres
        let startRotation = Quaternion(axis: startAxis, angle: options.startRotationDegrees * .pi / 180)
        let tremorPhases = (0..<12).map { _ in random.uniform(0, 2 * .pi) }
        let tremorFrequencies = (0..<12).map { i in i < 6 ? random.uniform(8, 12) : random.uniform(0.5, 2) }

        // Attitudes: the reference camera level, facing `heading`; device from camera by the screen orientation.
        let sensor = SensorConfig()
        let heading = options.headingDegrees * .pi / 180
        let worldFromReferenceCamera = Matrix3.rotation(axis: SIMD3(0, 0, 1), angle: -heading)
            * Matrix3([1, 0, 0, 0, 0, 1, 0, -1, 0])  // camera x east, y down, z north
        let frameToENU = options.attitudeFrame.toEastNorthUp
        let cameraFromDevice = sensor.cameraFromDevice(options.orientation)
        func deviceAttitude(_ worldFromCamera: Matrix3) -> Quaternion {
            Quaternion(rotationMatrix: frameToENU.transposed * worldFromCamera * cameraFromDevice)
        }
        let driftAxis = random.unitVector()
        var referenceNoise = random
        let referenceAttitude = AttitudeNoiseModel(noiseDegrees: options.attitude.noiseDegrees, driftDegreesPerSecond: 0, yawOffsetDegrees: 0)
            .measure(deviceAttitude(worldFromReferenceCamera), at: 0, driftAxis: driftAxis, random: &referenceNoise)
        random = referenceNoise

        // The reference's own row carries its attitude (another session: no timestamp); its truth is the identity.
        var frames = [SequenceFrame(file: "reference.jpg", attitude: referenceAttitude, truthRotation: .identity)]
        for k in 0..<options.frames {
            let time = Double(k) / options.fps
            let progressFraction = Double(k) / Double(options.frames - 1)
            let left = exp(-options.convergence * progressFraction)
            func tremor(_ offset: Int) -> Double {
                (0..<2).map { j in sin(2 * .pi * tremorFrequencies[offset + 3 * j] * time + tremorPhases[offset + 3 * j]) }.reduce(0, +) / 2
            }
            let shake = SIMD3(tremor(0), tremor(1), tremor(2)) * options.tremorDegrees * .pi / 180
            let sway = SIMD3(tremor(6), tremor(7), tremor(8)) * options.tremorMetres
            var base = Quaternion.identity.slerp(to: startRotation, t: left)
            var centre = startCentre * left + sway
            if options.orbitDegrees > 0 {
                // On the circle about the pivot, facing it: the camera's axes turn with its position.
                let pivot = SIMD3(0.0, 0.0, 7.5), angle = options.orbitDegrees * left * .pi / 180
                let turn = Matrix3.rotation(axis: SIMD3(0, 1, 0), angle: angle)
                base = Quaternion(rotationMatrix: turn.transposed)
                centre = pivot + turn * (-pivot) + sway
            }
            let rotation = (length(shake) > 0 ? Quaternion(axis: shake, angle: length(shake)) * base : base).rotationMatrix
            let translation = -(rotation * centre)

            let image = try SceneRenderer.render(now, camera: camera, rotation: rotation, translation: translation, size: size, background: 40)
                .adjusted(noise: options.imageNoise, seed: random.next())
            let file = String(format: "frame-%04d.jpg", k)
            try image.write(to: directory.appendingPathComponent(file).path, format: .jpeg(quality: options.jpegQuality))

            let worldFromCamera = worldFromReferenceCamera * rotation.transposed
            let measured = options.attitude.measure(deviceAttitude(worldFromCamera), at: time, driftAxis: driftAxis, random: &random)
            frames.append(SequenceFrame(
                file: file, timestamp: time, attitude: measured, truthRotation: Quaternion(rotationMatrix: rotation),
                truthTranslation: length(translation) > 1e-12 ? translation / length(translation) : nil))
            progress?(k + 1, options.frames)
        }
        let manifest = SequenceManifest(
            name: options.name,
            intrinsics: SequenceIntrinsics(fx: camera.fx, fy: camera.fy, cx: camera.cx, cy: camera.cy),
            reference: "reference.jpg", cameraOrientation: options.orientation, attitudeFrame: options.attitudeFrame,
            provenance: "rephoto synth: three textured planes rendered by ray casting; seed \(options.seed), \(options.frames) frames at \(options.width)x\(options.height)",
            license: "generated; textures from OpenCV's samples (opencv-doc, BSD-3-Clause/Apache-2.0)")
        let sequence = FrameSequence(manifest: manifest, frames: frames, directory: directory)
        try sequence.write(to: directory)
        return sequence
    }
}
