import ArgumentParser
import Foundation
import RephotoKit

struct SynthCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "synth",
        abstract: "Render a synthetic rephotography sequence with exact ground truth and simulated phone attitudes.",
        discussion: "Three textured planes (OpenCV sample photographs) seen from a trajectory that starts off the reference pose and converges to it with hand tremor. Deterministic for a seed. Writes the sequence format of datasets/README.md.")

    @Option(help: "Output sequence folder.") var out: String
    @Option(help: "Sequence name.") var name = "synthetic"
    @Option(help: "Folder of OpenCV's sample images (textures).") var textures = ".cache/opencv-samples"
    @Option(help: "Number of frames (2...300).") var frames = 60
    @Option(help: "Frames per second (timestamps).") var fps = 30.0
    @Option(help: "Frame width, pixels.") var width = 640
    @Option(help: "Frame height, pixels.") var height = 480
    @Option(help: "Horizontal field of view, degrees.") var fieldOfView = 63.0
    @Option(help: "Random seed.") var seed: UInt64 = 1
    @Option(help: "Start offset: rotation, degrees.") var startRotation = 8.0
    @Option(help: "Start offset: camera displacement, metres.") var startTranslation = 0.5
    @Option(help: "Convergence: the start offset decays as exp(-c * progress).") var convergence = 5.0
    @Option(help: "Hand tremor: rotation amplitude, degrees.") var tremorDegrees = 0.1
    @Option(help: "Hand tremor: displacement amplitude, metres.") var tremorMetres = 0.002
    @Option(help: "Heading of the reference camera, degrees east of north.") var heading = 0.0
    @Option(help: "How the phone is held: portrait, portraitUpsideDown, landscapeLeft, landscapeRight.") var orientation = ScreenOrientation.landscapeLeft
    @Option(help: "Attitude reference frame written to the manifest.") var attitudeFrame = AttitudeReferenceFrame.xMagneticNorthZVertical
    @Option(help: "Attitude white noise per axis, degrees.") var attitudeNoise = 0.05
    @Option(help: "Gyro-bias drift, degrees per second.") var attitudeDrift = 0.02
    @Option(help: "Heading offset of the current session, degrees.") var yawOffset = 3.0
    @Option(help: "Then: reference contrast factor.") var referenceContrast = 1.0
    @Option(help: "Then: reference brightness offset, grey levels.") var referenceBrightness = 0.0
    @Option(help: "Then: reference blur, Gaussian sigma in pixels.") var referenceBlur = 0.0
    @Option(help: "Sensor noise on every frame, grey levels (sigma).") var imageNoise = 0.0
    @Flag(help: "Now: an object stands in front of the scene in the current frames.") var occluder = false
    @Flag(help: "Now: part of the back wall has changed in the current frames.") var replacedRegion = false
    @Option(help: "JPEG quality of the frames.") var jpegQuality = 90

    func run() throws {
        var o = SyntheticSequenceOptions()
        o.name = name
        o.frames = frames
        o.fps = fps
        o.width = width
        o.height = height
        o.fieldOfViewDegrees = fieldOfView
        o.seed = seed
        o.startRotationDegrees = startRotation
        o.startTranslationMetres = startTranslation
        o.convergence = convergence
        o.tremorDegrees = tremorDegrees
        o.tremorMetres = tremorMetres
        o.headingDegrees = heading
        o.orientation = orientation
        o.attitudeFrame = attitudeFrame
        o.attitude = AttitudeNoiseModel(noiseDegrees: attitudeNoise, driftDegreesPerSecond: attitudeDrift, yawOffsetDegrees: yawOffset)
        o.referenceContrast = referenceContrast
        o.referenceBrightness = referenceBrightness
        o.referenceBlur = referenceBlur
        o.imageNoise = imageNoise
        o.occluder = occluder
        o.replacedRegion = replacedRegion
        o.jpegQuality = jpegQuality
        let progress = Progress(label: "synth")
        let sequence = try SyntheticSequence.generate(o, textureDirectory: textures, to: URL(fileURLWithPath: out)) { progress.update($0, of: $1) }
        print("\(sequence.manifest.name): reference + \(sequence.currentFrames.count) frames with ground truth -> \(out)")
    }
}
