import RephotoKit
import RephotoData
import ArgumentParser
import Foundation

/// Settings of a generated rephotography sequence: what a person retaking a photo would record, with
/// exact ground truth. These are `rephoto synth`'s options, declared once here (datasets/README.md);
/// `SyntheticSequenceOptions.defaults` is the default set for code.
public struct SyntheticSequenceOptions: ParsableArguments, Sendable {
    @Option(parsing: .unconditional, help: "Sequence name (default: the name of the folder it is written to).") public var name: String?
    @Option(name: .customLong("frames"), parsing: .unconditional,
            help: "Number of frames (2...300; default 60, or for forward and approach as many as fit half the street at --step, up to 60).")
    public var framesGiven: Int?
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
    @Option(parsing: .unconditional, help: "Camera path: converge (from the start offset or --orbit towards the reference, three planes), forward (driving along the reference's optical axis, --step metres a frame) or approach (walking up to the reference's vantage point in --step strides, mostly along its viewing direction, with --start-rotation turning to nothing); forward and approach film a street.")
    public var motion = SyntheticMotion.converge
    @Option(name: .customLong("step"), parsing: .unconditional, help: "forward, approach: metres between frames (default 1 forward, 0.05 approach, a walking pace at 30 fps).")
    public var stepMetres: Double?
    @Option(name: .customLong("scene-near"), parsing: .unconditional, help: "forward, approach: the street's nearest depth from any camera, metres (default 5).")
    public var sceneNearMetres: Double?
    @Option(name: .customLong("scene-far"), parsing: .unconditional, help: "forward, approach: the street's farthest depth from any camera, metres (default 50).")
    public var sceneFarMetres: Double?
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
    @Flag(help: "Then: the reference is a scanned old print from an unknown camera (--old-print-zoom), its principal point off the photo's centre, faded, blurred, grainy, vignetted, inside a cream border, a strong JPEG; sequence.json says \"referenceIntrinsics\": \"unknown\" and frames.csv gives its true camera.")
    public var oldPrint = false
    @Option(parsing: .unconditional, help: "Old print: the current camera's zoom that frames what the print shows (> 1: the old lens was longer).")
    public var oldPrintZoom = 1.5
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
        if motion == .converge {
            for (name, value) in [("--step", stepMetres), ("--scene-near", sceneNearMetres), ("--scene-far", sceneFarMetres)] where value != nil {
                throw RephotoError.badInput("\(name) applies to --motion forward or approach, not converge")
            }
        } else {
            if orbitDegrees != 0 { throw RephotoError.badInput("--orbit applies to --motion converge, not \(motion)") }
            try require(step > 0 && step <= 5, "step", step, "over 0, up to 5 metres")
            try require(sceneNear >= 1 && sceneNear <= 100, "scene near", sceneNear, "1...100 metres")
            try require(sceneFar >= 2 * sceneNear && sceneFar <= 1000, "scene far", sceneFar, "2 x scene near (\(2 * sceneNear))...1000 metres")
            // The cameras must stay out of the street's first half, or what they see would barely change in depth.
            let travel = Double(frames) * step
            guard travel <= (sceneFar - sceneNear) / 2 else {
                throw RephotoError.badInput(String(format: "--frames %d x --step %g = %g metres is more than half the street, (--scene-far %g - --scene-near %g) / 2 = %g metres: lower --frames or --step, or raise --scene-far",
                                                   frames, step, travel, sceneFar, sceneNear, (sceneFar - sceneNear) / 2))
            }
            // Sway moves a camera up to --tremor-metres either way: the street must still reach near past all of them.
            try require(travel + 2 * tremorMetres < sceneFar - sceneNear, "frames x step + 2 x tremor", travel + 2 * tremorMetres,
                        "under the street's length, scene far - scene near = \(sceneFar - sceneNear) metres")
        }
        // Upper bounds too: past them the truth overflowed to NaN or OpenCV refused the blur.
        try require(abs(headingDegrees) <= 360, "heading", headingDegrees, "-360...360 degrees")
        try require(tremorDegrees >= 0 && tremorDegrees <= 10 && tremorMetres >= 0 && tremorMetres <= 1, "tremor",
                    "\(tremorDegrees)°, \(tremorMetres) m", "0...10 degrees and 0...1 metre")
        try require(oldPrintZoom >= 0.3 && oldPrintZoom <= 4, "old print zoom", oldPrintZoom, "0.3...4")
        try require(referenceContrast >= 0 && referenceContrast <= 10 && referenceBlur >= 0 && referenceBlur <= 100
                    && imageNoise >= 0 && imageNoise <= 255 && abs(referenceBrightness) <= 255, "image changes",
                    "contrast \(referenceContrast), brightness \(referenceBrightness), blur \(referenceBlur), noise \(imageNoise)",
                    "contrast 0...10, brightness -255...255, blur 0...100 px, noise 0...255")
        try require((1...100).contains(jpegQuality), "jpeg quality", jpegQuality, "1...100")
        // An old print has its own aging (grey, fading, blur, grain, JPEG 45): the plain reference's changes would be ignored.
        if oldPrint, referenceContrast != 1 || referenceBrightness != 0 || referenceBlur != 0 {
            throw RephotoError.badInput("--old-print ages the reference itself: leave out --reference-contrast, --reference-brightness and --reference-blur (given \(referenceContrast), \(referenceBrightness), \(referenceBlur))")
        }
        try attitude.validate()
    }

    /// The number of frames: as given, else 60, or for a street as many as fit in its first half (at least 2), so
    /// that `--motion forward --step 1` works on the default street.
    public var frames: Int {
        get {
            if let framesGiven { return framesGiven }
            guard motion != .converge, step > 0, step.isFinite, sceneFar > sceneNear else { return 60 }
            return max(2, min(60, Int(((sceneFar - sceneNear) / 2 / step).rounded(.down))))
        }
        set { framesGiven = newValue }
    }

    /// Metres between frames of forward and approach motion.
    public var step: Double { stepMetres ?? (motion == .approach ? 0.05 : 1) }
    /// The street's depth range from every camera, metres.
    public var sceneNear: Double { sceneNearMetres ?? 5 }
    public var sceneFar: Double { sceneFarMetres ?? 50 }

    public var camera: CameraIntrinsics {
        let f = Double(width) / 2 / tan(fieldOfViewDegrees * .pi / 360)
        return CameraIntrinsics(fx: f, fy: f, cx: Double(width - 1) / 2, cy: Double(height - 1) / 2)
    }
}

/// How the camera moves through a synthetic sequence (`rephoto synth --motion`).
public enum SyntheticMotion: String, CaseIterable, Codable, Sendable, ExpressibleByArgument {
    /// From the start offset (`--start-rotation`, `--start-translation`) or an `--orbit` towards the reference pose,
    /// as exp(-convergence x progress); the three planes.
    case converge
    /// Driving: frame k is (k + 1) steps ahead of the reference along its optical axis, turned only by tremor; a street.
    case forward
    /// Walking up to the reference's vantage point: frame k is (frames - k) steps behind it on a line at most 14°
    /// off its viewing direction, turned by the start rotation times (frames - k) / frames; a street.
    case approach
}

/// One frame's camera: rotation R and centre C in the reference camera's frame, X_camera = R X_reference + t.
public struct SyntheticCameraPose: Sendable {
    public var rotation: Matrix3
    public var centre: SIMD3<Double>
    public var translation: SIMD3<Double> { -(rotation * centre) }

    public init(rotation: Matrix3, centre: SIMD3<Double>) {
        self.rotation = rotation
        self.centre = centre
    }
}

/// The camera path of a sequence. Its draws from the sequence's generator come in the order they always had
/// (start axis, lateral direction, tremor phases and frequencies), so converge sequences stay byte for byte
/// what they were; forward and approach draw their own from a second generator.
struct SyntheticCameraPath {
    let options: SyntheticSequenceOptions
    let startRotation: Quaternion
    let startCentre: SIMD3<Double>
    let tremorPhases: [Double]
    let tremorFrequencies: [Double]

    init(_ options: SyntheticSequenceOptions, random: inout SeededRandom) {
        self.options = options
        // Trajectory: start offset, exponential convergence, hand tremor.
        let startAxis = random.unitVector()
        var lateral = random.unitVector()
        lateral.z *= 0.3  // people step sideways and up/down more than forwards
        tremorPhases = (0..<12).map { _ in random.uniform(0, 2 * .pi) }
        tremorFrequencies = (0..<12).map { i in i < 6 ? random.uniform(8, 12) : random.uniform(0.5, 2) }
        switch options.motion {
        case .converge:
            startCentre = lateral / length(lateral) * options.startTranslationMetres
            startRotation = Quaternion(axis: startAxis, angle: options.startRotationDegrees * .pi / 180)
        case .forward:
            startCentre = .zero
            startRotation = .identity
        case .approach:
            var walk = SeededRandom(seed: options.seed ^ 0xA99_0AC4)
            // Mostly backwards along the viewing direction: up to 14° sideways, 3° up or down.
            let direction = SIMD3(walk.uniform(-0.25, 0.25), walk.uniform(-0.05, 0.05), -1.0)
            startCentre = direction / length(direction) * (Double(options.frames) * options.step)
            startRotation = Quaternion(axis: walk.unitVector(), angle: options.startRotationDegrees * .pi / 180)
        }
    }

    func pose(frame k: Int) -> SyntheticCameraPose {
        let time = Double(k) / options.fps
        let progressFraction = Double(k) / Double(options.frames - 1)
        let left = exp(-options.convergence * progressFraction)
        func tremor(_ offset: Int) -> Double {
            (0..<2).map { j in sin(2 * .pi * tremorFrequencies[offset + 3 * j] * time + tremorPhases[offset + 3 * j]) }.reduce(0, +) / 2
        }
        let shake = SIMD3(tremor(0), tremor(1), tremor(2)) * options.tremorDegrees * .pi / 180
        let sway = SIMD3(tremor(6), tremor(7), tremor(8)) * options.tremorMetres
        var base: Quaternion, centre: SIMD3<Double>
        switch options.motion {
        case .converge:
            base = Quaternion.identity.slerp(to: startRotation, t: left)
            centre = startCentre * left + sway
            if options.orbitDegrees > 0 {
                // On the circle about the pivot, facing it: the camera's axes turn with its position.
                let pivot = SIMD3(0.0, 0.0, 7.5), angle = options.orbitDegrees * left * .pi / 180
                let turn = Matrix3.rotation(axis: SIMD3(0, 1, 0), angle: angle)
                base = Quaternion(rotationMatrix: turn.transposed)
                centre = pivot + turn * (-pivot) + sway
            }
        case .forward:
            base = .identity
            centre = SIMD3(0, 0, Double(k + 1) * options.step) + sway
        case .approach:
            // Linear, as a walk is; the last frame is one step short of the vantage point.
            let remaining = Double(options.frames - k) / Double(options.frames)
            base = Quaternion.identity.slerp(to: startRotation, t: remaining)
            centre = startCentre * remaining + sway
        }
        let rotation = (length(shake) > 0 ? Quaternion(axis: shake, angle: length(shake)) * base : base).rotationMatrix
        return SyntheticCameraPose(rotation: rotation, centre: centre)
    }
}

/// Renders a synthetic sequence (SyntheticScene.threePlanes or, for forward and approach motion,
/// SyntheticScene.street; exact per-pixel ray casting) and writes it in the sequence format: `reference.jpg`,
/// `frame-NNNN.jpg`, `sequence.json`, `frames.csv` with ground truth and simulated phone attitudes. Identical
/// output for identical options and seed.
public enum SyntheticSequence {
    /// The generator after the reference's noise seed and the camera path's draws, and the path.
    private static func start(_ options: SyntheticSequenceOptions) -> (random: SeededRandom, referenceNoiseSeed: UInt64, path: SyntheticCameraPath) {
        var random = SeededRandom(seed: options.seed)
        let referenceNoiseSeed = random.next()
        let path = SyntheticCameraPath(options, random: &random)
        return (random, referenceNoiseSeed, path)
    }

    /// The true camera of every current frame, in order, as `generate` renders them (its translations,
    /// normalised, are the sequence's truth).
    public static func cameraPoses(_ options: SyntheticSequenceOptions) throws -> [SyntheticCameraPose] {
        try options.validate()
        let path = start(options).path
        return (0..<options.frames).map { path.pose(frame: $0) }
    }

    /// The scene a sequence films, before its "now" changes: the three planes, or the street placed so that the
    /// reference and every frame's camera in `poses` see it --scene-near...--scene-far ahead.
    public static func scene(_ options: SyntheticSequenceOptions, poses: [SyntheticCameraPose], textureDirectory: String) throws -> [TexturedPlane] {
        guard options.motion != .converge else { return try SyntheticScene.threePlanes(textureDirectory: textureDirectory) }
        return try SyntheticScene.street(textureDirectory: textureDirectory, near: options.sceneNear, far: options.sceneFar,
                                         cameraCentres: [.zero] + poses.map(\.centre), camera: options.camera,
                                         size: ImageSize(width: options.width, height: options.height))
    }

    /// The sequence's name: `--name`, else the last component of the folder it is written to.
    public static func name(_ options: SyntheticSequenceOptions, directory: URL) -> String {
        options.name ?? directory.standardizedFileURL.lastPathComponent
    }

    public static func generate(_ options: SyntheticSequenceOptions, textureDirectory: String, to directory: URL,
                                progress: ((Int, Int) -> Void)? = nil) throws -> FrameSequence {
        try options.validate()
        try FrameSequence.checkName(name(options, directory: directory), place: options.name == nil ? "--out's folder name (or give --name)" : "--name")
        try SyntheticTextures.check(textureDirectory, for: options)
        let started = start(options)
        var random = started.random
        let path = started.path, referenceNoiseSeed = started.referenceNoiseSeed
        let poses = (0..<options.frames).map { path.pose(frame: $0) }
        let camera = options.camera
        let size = ImageSize(width: options.width, height: options.height)
        let scene = try Self.scene(options, poses: poses, textureDirectory: textureDirectory)
        // The street's far facades are minified several texels to a pixel: 2 x 2 rays a pixel keep them from
        // aliasing. The three planes keep one ray, so that their sequences stay what they were.
        let supersampling = options.motion == .converge ? 1 : 2
        var now = scene
        if options.replacedRegion {
            let wall = scene[0].texture
            let patch = try Image(contentsOfFile: "\(textureDirectory)/home.jpg").resized(width: wall.width / 4, height: wall.height / 4)
            now[0].texture = try wall.pasting(patch, x: wall.width * 3 / 8, y: wall.height / 3)
        }
        if options.occluder {
            // In the street: 1 m past its start, so within the depth range too.
            let nearest = (poses.map(\.centre.z) + [0]).max()!
            let centre = options.motion == .converge ? SIMD3(0.7, 0.35, 3.2) : SIMD3(0.7, 0.35, nearest + options.sceneNear + 1)
            now.append(try SyntheticScene.occluder(textureDirectory: textureDirectory, centre: centre))
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)

        // The reference: "then", possibly with an old photo's contrast, brightness and blur, or an old print.
        var referenceCamera: SIMD4<Double>?
        if options.oldPrint {
            let print = try OldPrint(options, scene: scene, supersampling: supersampling, noiseSeed: referenceNoiseSeed)
            try print.scan.write(to: directory.appendingPathComponent("reference.jpg").path, format: .jpeg(quality: 45))
            referenceCamera = SIMD4(print.camera.fx, print.camera.fy, print.camera.cx, print.camera.cy)
        } else {
            let reference = try SceneRenderer.render(scene, camera: camera, size: size, background: 40, supersampling: supersampling)
                .adjusted(contrast: options.referenceContrast, brightness: options.referenceBrightness, blur: options.referenceBlur,
                          noise: options.imageNoise, seed: referenceNoiseSeed)
            try reference.write(to: directory.appendingPathComponent("reference.jpg").path, format: .jpeg(quality: options.jpegQuality))
        }
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
            let pose = poses[k]
            let rotation = pose.rotation, translation = pose.translation

            let image = try SceneRenderer.render(now, camera: camera, rotation: rotation, translation: translation, size: size, background: 40,
                                                 supersampling: supersampling)
                .adjusted(noise: options.imageNoise, seed: random.next())
            let file = String(format: "frame-%04d.jpg", k)
            try image.write(to: directory.appendingPathComponent(file).path, format: .jpeg(quality: options.jpegQuality))

            let worldFromCamera = worldFromReferenceCamera * rotation.transposed
            let measured = options.attitude.measure(deviceAttitude(worldFromCamera), at: time, driftAxis: driftAxis, random: &random)
            frames.append(SequenceFrame(
                file: file, timestamp: time, attitude: measured, truthRotation: Quaternion(rotationMatrix: rotation),
                truthTranslation: length(translation) > 1e-12 ? translation / length(translation) : nil, truthReferenceCamera: referenceCamera))
            progress?(k + 1, options.frames)
        }
        let sceneText = switch options.motion {
        case .converge: "three textured planes"
        case .forward, .approach:
            "a street \(String(format: "%g-%g", options.sceneNear, options.sceneFar)) m deep, \(options.motion.rawValue) motion of \(String(format: "%g", options.step)) m a frame"
        }
        var manifest = SequenceManifest(
            name: name(options, directory: directory),
            intrinsics: SequenceIntrinsics(fx: camera.fx, fy: camera.fy, cx: camera.cx, cy: camera.cy),
            reference: "reference.jpg", cameraOrientation: options.orientation, attitudeFrame: options.attitudeFrame,
            provenance: "rephoto synth: \(sceneText) rendered by ray casting; seed \(options.seed), \(options.frames) frames at \(options.width)x\(options.height)",
            license: "generated; textures from OpenCV's samples (opencv-doc, BSD-3-Clause/Apache-2.0)")
        if options.oldPrint {
            manifest.referenceIntrinsics = .unknown
            manifest.provenance += "; the reference an old print (zoom \(options.oldPrintZoom), its camera unknown)"
        }
        let sequence = FrameSequence(manifest: manifest, frames: frames, directory: directory)
        try sequence.write(to: directory)
        return sequence
    }
}

/// A scanned old print of the scene from the reference's vantage point (`rephoto synth --old-print`): another camera,
/// whose field of view is `--old-print-zoom` times narrower than the frames' and whose principal point lies up to 5 %
/// off the photo's centre (cropped off-centre), on a photo of three quarters the frames' size; grey, faded, blurred,
/// grainy and vignetted, inside a cream border of 3-8 % a side.
struct OldPrint {
    let scan: Image
    /// Its true camera, in the scan's pixels.
    let camera: CameraIntrinsics

    init(_ options: SyntheticSequenceOptions, scene: [TexturedPlane], supersampling: Int, noiseSeed: UInt64) throws {
        // Its own generator: sequences without an old print keep their draws.
        var random = SeededRandom(seed: options.seed ^ 0x01D_9217)
        let width = options.width * 3 / 4, height = options.height * 3 / 4
        let focal = options.oldPrintZoom * options.camera.fx * Double(width) / Double(options.width)
        let photo = CameraIntrinsics(fx: focal, fy: focal, cx: Double(width - 1) / 2 + random.uniform(-0.05, 0.05) * Double(width),
                                     cy: Double(height - 1) / 2 + random.uniform(-0.05, 0.05) * Double(height))
        let margins = (0..<4).map { _ in Int((random.uniform(0.03, 0.08) * Double(width)).rounded()) }
        scan = try SceneRenderer.render(scene, camera: photo, size: ImageSize(width: width, height: height), background: 40, supersampling: supersampling)
            .grayscale()
            .adjusted(contrast: 0.55, brightness: 70, blur: 1, noise: 6, seed: noiseSeed)
            .printScan(vignette: 0.25, borderColour: 235, margins: margins)
        camera = CameraIntrinsics(fx: focal, fy: focal, cx: photo.cx + Double(margins[3]), cy: photo.cy + Double(margins[0]))
    }
}
