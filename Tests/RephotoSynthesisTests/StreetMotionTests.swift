import RephotoTestSupport
import Foundation
import Testing
import RephotoKit
import RephotoData
import RephotoSynthesis

/// `rephoto synth --motion forward | approach`: the street scene, the camera paths and their truth, checked against
/// values worked out here from the options (not read back from the generator's own arithmetic where avoidable).
@Suite struct StreetMotionTests {
    static var textures: String { Fixtures.textures }

    static func options(_ arguments: [String]) throws -> SyntheticSequenceOptions {
        try SyntheticSequenceOptions.parse(["--width", "160", "--height", "120"] + arguments)
    }

    static func generate(_ options: SyntheticSequenceOptions) throws -> (URL, FrameSequence) {
        let dir = try Scratch.directory()
        _ = try SyntheticSequence.generate(options, textureDirectory: textures, to: dir)
        return (dir, try FrameSequence.load(from: dir))
    }

    /// Forward motion without tremor: frame k's camera is (k + 1) steps ahead on the reference's optical axis, unturned;
    /// frames.csv says R = I and t along -z; and the written frame is the street rendered from exactly that pose.
    @Test func forwardFramesAdvanceAlongTheOpticalAxisByTheStep() throws {
        let step = 0.7
        let options = try Self.options(["--motion", "forward", "--step", "0.7", "--frames", "4", "--tremor-degrees", "0", "--tremor-metres", "0"])
        let poses = try SyntheticSequence.cameraPoses(options)
        #expect(poses.count == 4)
        for (k, pose) in poses.enumerated() {
            #expect(length(pose.centre - SIMD3(0, 0, Double(k + 1) * step)) < 1e-12, "frame \(k): \(pose.centre)")
            #expect(Matrix3.angleDegrees(between: pose.rotation, and: .identity) < 1e-9)
        }
        let (dir, sequence) = try Self.generate(options)
        #expect(sequence.manifest.provenance.contains("a street 5-50 m deep, forward motion of 0.7 m a frame"))
        let intrinsics = try #require(sequence.manifest.intrinsics)
        let camera = CameraIntrinsics(fx: intrinsics.fx, fy: intrinsics.fy, cx: intrinsics.cx, cy: intrinsics.cy)
        // The street as the options ask for it: 5...50 m ahead of the reference (z = 0) and of cameras 1...4 steps ahead.
        let centres = (0...4).map { SIMD3(0, 0, Double($0) * step) }
        let street = try SyntheticScene.street(textureDirectory: Self.textures, near: 5, far: 50, cameraCentres: centres, camera: camera,
                                               size: ImageSize(width: 160, height: 120))
        for (k, frame) in sequence.currentFrames.enumerated() {
            let rotation = try #require(frame.truthRotation).rotationMatrix
            let direction = try #require(frame.truthTranslation)
            #expect(Matrix3.angleDegrees(between: rotation, and: .identity) < 1e-9, "\(frame.file)")
            #expect(length(direction - SIMD3(0, 0, -1)) < 1e-12, "\(frame.file): \(direction)")
            // The truth's direction scaled by the requested baseline reproduces the frame byte for byte.
            let rendered = try SceneRenderer.render(street, camera: camera, rotation: rotation, translation: direction * (Double(k + 1) * step),
                                                    size: ImageSize(width: 160, height: 120), background: 40, supersampling: 2)
            let path = try Scratch.directory().appendingPathComponent("expected.jpg").path
            try rendered.write(to: path, format: .jpeg(quality: options.jpegQuality))
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(contentsOf: dir.appendingPathComponent(frame.file)), "\(frame.file)")
        }
    }

    /// With the default tremor (0.1°, 2 mm) the direction stays within a degree of the optical axis, and the truth
    /// written is the path's pose.
    @Test func forwardTruthWithTremorIsThePathsPose() throws {
        let options = try Self.options(["--motion", "forward", "--step", "0.5", "--frames", "3"])
        let poses = try SyntheticSequence.cameraPoses(options)
        let (_, sequence) = try Self.generate(options)
        for (k, (frame, pose)) in zip(sequence.currentFrames, poses).enumerated() {
            #expect(abs(pose.centre.z - Double(k + 1) * 0.5) <= 0.002 && abs(pose.centre.x) <= 0.002 && abs(pose.centre.y) <= 0.002)
            let direction = try #require(frame.truthTranslation)
            #expect(acos(min(1, -direction.z)) * 180 / .pi < 1, "\(frame.file): \(direction)")
            let t = pose.translation
            #expect(length(direction - t / length(t)) < 1e-12)
            #expect(Matrix3.angleDegrees(between: try #require(frame.truthRotation).rotationMatrix, and: pose.rotation) < 1e-6)
        }
    }

    /// Approach: the camera starts frames x step behind the vantage point, within 15° of the reference's viewing
    /// direction, comes one step nearer each frame, and ends one step short, its start rotation shrinking linearly.
    @Test func approachWalksUpToTheVantagePoint() throws {
        let options = try Self.options(["--motion", "approach", "--step", "0.3", "--frames", "6", "--start-rotation", "8",
                                        "--tremor-degrees", "0", "--tremor-metres", "0"])
        let poses = try SyntheticSequence.cameraPoses(options)
        for (k, pose) in poses.enumerated() {
            let remaining = Double(6 - k)
            #expect(abs(length(pose.centre) - remaining * 0.3) < 1e-12, "frame \(k): \(pose.centre)")
            #expect(-pose.centre.z / length(pose.centre) > cos(15 * Double.pi / 180), "frame \(k): \(pose.centre)")
            #expect(abs(Matrix3.angleDegrees(between: pose.rotation, and: .identity) - 8 * remaining / 6) < 1e-6)
            if k > 0 {
                // One straight line: each stride is one step, in the same direction.
                let stride = pose.centre - poses[k - 1].centre
                #expect(abs(length(stride) - 0.3) < 1e-12)
                #expect(length(stride / 0.3 + poses[0].centre / length(poses[0].centre)) < 1e-9)
            }
        }
        let (_, sequence) = try Self.generate(options)
        for (frame, pose) in zip(sequence.currentFrames, poses) {
            #expect(Matrix3.angleDegrees(between: try #require(frame.truthRotation).rotationMatrix, and: pose.rotation) < 1e-6)
            // Behind the reference and looking at its scene: the reference lies ahead of the camera, t_z > 0.
            let direction = try #require(frame.truthTranslation)
            #expect(length(direction - pose.translation / length(pose.translation)) < 1e-12 && direction.z > 0.85)
        }
    }

    /// Every street point that projects into a frame lies near...far ahead of its camera, and each frame sees the
    /// whole spread: its nearest visible point at `near` (the frame's edges), its farthest within the travel of `far`.
    @Test(arguments: [["--motion", "forward", "--step", "2", "--frames", "5"],
                      ["--motion", "approach", "--step", "0.5", "--frames", "8", "--start-rotation", "0"],
                      ["--motion", "forward", "--step", "0.5", "--frames", "4", "--scene-near", "8", "--scene-far", "20"]])
    func visibleDepthsFallWithinTheRequestedRange(_ arguments: [String]) throws {
        let options = try Self.options(arguments + ["--tremor-degrees", "0", "--tremor-metres", "0"])
        let (near, far) = (options.sceneNear, options.sceneFar)
        let poses = try SyntheticSequence.cameraPoses(options)
        let travel = Double(options.frames) * options.step
        let scene = try SyntheticSequence.scene(options, poses: poses, textureDirectory: Self.textures)
        let camera = options.camera
        let cameras = [SyntheticCameraPose(rotation: .identity, centre: .zero)] + poses
        for (index, pose) in cameras.enumerated() {
            var depths: [Double] = []
            for plane in scene {
                // A 41 x 41 grid over the plane's texture, corners included.
                let (w, h) = (Double(plane.texture.width - 1), Double(plane.texture.height - 1))
                for i in 0...40 { for j in 0...40 {
                    let p = pose.rotation * (plane.origin + plane.u * (w * Double(i) / 40) + plane.v * (h * Double(j) / 40)) + pose.translation
                    guard p.z > 0 else { continue }
                    let u = camera.fx * p.x / p.z + camera.cx, v = camera.fy * p.y / p.z + camera.cy
                    if u >= -0.5 && v >= -0.5 && u <= 159.5 && v <= 119.5 { depths.append(p.z) }
                } }
            }
            let (nearest, farthest) = (try #require(depths.min()), try #require(depths.max()))
            #expect(nearest >= near - 1e-9 && farthest <= far + 1e-9, "camera \(index): \(nearest)...\(farthest) m")
            #expect(nearest <= near + 0.5 && farthest >= far - travel - 1e-9, "camera \(index): \(nearest)...\(farthest) m")
        }
    }

    /// Dots on the street's closing wall, seen from a forward camera, land where a pinhole projection of their
    /// texture positions puts them, to a fraction of a pixel, with one ray a pixel and with 2 x 2 (centroids
    /// measured in the rendered image).
    @Test(arguments: [1, 2]) func streetDotsLandWhereTheyProject(supersampling: Int) throws {
        let options = try SyntheticSequenceOptions.parse([])
        let camera = options.camera, size = ImageSize(width: options.width, height: options.height)
        var scene = try SyntheticScene.street(textureDirectory: Self.textures, near: 5, far: 12, cameraCentres: [.zero, SIMD3(0, 0, 2)],
                                              camera: camera, size: size)
        let (side, tall) = (120, 240)
        var pixels = [UInt8](repeating: 20, count: side * tall)
        let dots: [(Double, Double)] = [30.0, 60.0, 90.0].flatMap { (a: Double) in stride(from: 30.0, to: 240.0, by: 30.0).map { (b: Double) in (a, b) } }
        for (a, b) in dots {
            for y in Int(b) - 8...Int(b) + 8 { for x in Int(a) - 8...Int(a) + 8 {
                let d2 = (Double(x) - a) * (Double(x) - a) + (Double(y) - b) * (Double(y) - b)
                pixels[y * side + x] = UInt8((20 + 230 * exp(-d2 / (2 * 2.0 * 2.0))).rounded())
            } }
        }
        // The closing wall (plane 0) keeps its rectangle: its axes rescaled to the dot texture's size.
        let wall = scene[0]
        let dotsTexture = try Image(width: side, height: tall, channels: 1, pixels: pixels)
        scene[0] = TexturedPlane(texture: dotsTexture, origin: wall.origin,
                                 u: wall.u * Double(wall.texture.width - 1) / Double(side - 1),
                                 v: wall.v * Double(wall.texture.height - 1) / Double(tall - 1))
        let (r, t) = Fixtures.pose(rotation: Fixtures.rotationXYZ(degrees: 1, -2, 0.5), centre: SIMD3(0.1, -0.05, 1.5))
        let gray = try SceneRenderer.render(scene, camera: camera, rotation: r, translation: t, size: size, background: 40,
                                            supersampling: supersampling).grayscale().pixels()
        var worst = 0.0, measured = 0
        for (a, b) in dots {
            let p = r * (scene[0].origin + scene[0].u * a + scene[0].v * b) + t
            #expect(p.z > 9 && p.z < 12)
            let u = camera.fx * p.x / p.z + camera.cx, v = camera.fy * p.y / p.z + camera.cy
            let cu = Int(u.rounded()), cv = Int(v.rounded())
            // A window of 5 sigma each side (the blobs are about 5 px sigma here); neighbours are 75 px apart.
            guard cu >= 26 && cv >= 26 && cu < size.width - 26 && cv < size.height - 26 else { continue }
            var sw = 0.0, sx = 0.0, sy = 0.0
            for y in cv - 25...cv + 25 { for x in cu - 25...cu + 25 {
                let w = max(0, Double(gray[y * size.width + x]) - 20)
                sw += w; sx += w * Double(x); sy += w * Double(y)
            } }
            worst = max(worst, Point2(x: sx / sw, y: sy / sw).distance(to: Point2(x: u, y: v)))
            measured += 1
        }
        #expect(measured >= 9, "\(measured) dots in view")
        #expect(worst < 0.2, "largest centroid offset \(worst) px")
    }

    @Test func approachIsDeterministicAndStreetOptionsNeedAStreet() throws {
        let a = try Self.generate(Self.options(["--motion", "approach", "--frames", "3", "--seed", "4", "--name", "walk"])).0
        let b = try Self.generate(Self.options(["--motion", "approach", "--frames", "3", "--seed", "4", "--name", "walk"])).0
        for file in ["frames.csv", "sequence.json", "reference.jpg", "frame-0002.jpg"] {
            #expect(try Data(contentsOf: a.appendingPathComponent(file)) == Data(contentsOf: b.appendingPathComponent(file)), "\(file)")
        }
        // The street's options mean nothing to the three planes' path: given with it, they are refused.
        for arguments in [["--step", "1"], ["--scene-near", "5"], ["--scene-far", "40"]] {
            #expect(throws: (any Error).self) { try SyntheticSequenceOptions.parse(arguments) }
        }
    }
}
