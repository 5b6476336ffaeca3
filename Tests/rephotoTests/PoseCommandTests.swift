import RephotoTestSupport
import Foundation
import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation
import Testing

@Suite struct PoseCommandTests {
    /// The JSON contract of docs/json-output.md, checked on graf1 -> graf3 against the published H1to3p.
    /// `--version`: the package's version, the OpenCV the process loaded (Debian's 4.6.0) and the build, exit 0; the
    /// completion script covers every subcommand.
    @Test func versionAndCompletionsFollowTheCommandLineConventions() throws {
        let version = try CLI.run(["--version"])
        #expect(version.status == 0)
        #expect(version.stdout.hasPrefix("rephoto \(RephotoVersion.number) (OpenCV 4.6.0, "), "\(version.stdout)")
        let completions = try CLI.run(["--generate-completion-script", "bash"])
        #expect(completions.status == 0)
        for command in ["pose", "align", "serve", "evaluate", "tune", "synth", "import", "calibrate", "defaults"] {
            #expect(completions.stdout.contains(command), "\(command) missing from the bash completions")
        }
    }

    @Test func jsonContractOnGraf() throws {
        let run = try CLI.run(["pose", "--reference", CLI.sample("graf1.png"), "--current", CLI.sample("graf3.png"), "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.isEmpty)
        let json = try #require(run.json)
        let rows = try #require(json["homography"] as? [[Double]])
        #expect(rows.count == 3 && rows.allSatisfy { $0.count == 3 })
        let published = Matrix3([7.6285898e-01, -2.9922929e-01, 2.2567123e+02, 3.3443473e-01, 1.0143901e+00, -7.6999973e+01,
                                 3.4663091e-04, -1.4364524e-05, 1.0])
        let corner = GroundTruthErrors.cornerError(estimate: Matrix3(rows: rows), truth: published, size: ImageSize(width: 800, height: 640))
        #expect(corner < 2)
        #expect(json["pose"] is NSNull)  // no intrinsics given
        #expect(json["schemaVersion"] as? Int == 2)
        let navigation = try #require(json["navigation"] as? [String: Any])
        #expect((navigation["quadrilateral"] as? [[Double]])?.count == 4)
        // One action per hint, in the hints' order, each hint its action's text.
        let hints = try #require(navigation["hints"] as? [String])
        let actions = try JSONDecoder().decode([GuidanceAction].self, from: JSONSerialization.data(withJSONObject: navigation["actions"] ?? []))
        #expect(!hints.isEmpty && actions.map(\.text) == hints, "\(hints) \(actions)")
        #expect((navigation["target"] as? [[Double]])?.first == [160, 128])
        let metrics = try #require(json["metrics"] as? [String: Any])
        for key in ["score", "afdPixels", "displacementPercent", "inlierRatio", "homographyRmsPixels"] {
            #expect(metrics[key] is Double, "metrics.\(key)")
        }
        let counts = try #require(json["counts"] as? [String: Any])
        for key in ["keypointsReference", "keypointsCurrent", "matches", "inliersHomography"] { #expect(counts[key] is Int, "counts.\(key)") }
        #expect(counts["inliersEssential"] is NSNull)
        let timings = try #require(json["timings"] as? [String: Double])
        #expect(Set(["detectReference", "detectCurrent", "match", "homography", "total", "loadReference", "loadCurrent"]).isSubset(of: timings.keys))
        #expect((json["warnings"] as? [String])?.contains { $0.hasPrefix("no intrinsics") } == true)
    }

    @Test func suzannePoseIsRotationOnlyWithNullTranslation() throws {
        let run = try CLI.run(["pose", "--reference", CLI.sample("Blender_Suzanne1.jpg"), "--current", CLI.sample("Blender_Suzanne2.jpg"),
                               "--intrinsics", "700,700,320,240", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let pose = try #require(run.json?["pose"] as? [String: Any])
        #expect(pose["rotationOnly"] as? Bool == true)
        #expect(pose.keys.contains("translation") && pose["translation"] is NSNull)
        #expect(abs((pose["rotationDegrees"] as? Double ?? 0) - 30) < 1)
        #expect((pose["rotation"] as? [[Double]])?.count == 3)
    }

    @Test func humanSummaryIsShortAndDrawWritesTheOverlay() throws {
        let out = try Scratch.directory().appendingPathComponent("overlay.png").path
        let run = try CLI.run(["pose", "--reference", CLI.sample("Blender_Suzanne1.jpg"), "--current", CLI.sample("Blender_Suzanne2.jpg"),
                               "--calibration", CLI.packageRoot.appendingPathComponent("calibration/opencv-sample-640x480.yml").path,
                               "--draw", out])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.count <= 12)
        #expect(lines.contains { $0.hasPrefix("score") } && lines.contains { $0.hasPrefix("navigate") } && lines.contains { $0.hasPrefix("pose") })
        let overlay = try Image(contentsOfFile: out)
        #expect((overlay.width, overlay.height) == (640, 480))
        // The overlay differs from the plain frame exactly where lines were drawn: some pixels, not all.
        let plain = try Image(contentsOfFile: CLI.sample("Blender_Suzanne2.jpg")).pixels(), drawn = try overlay.pixels()
        let changed = zip(plain, drawn).filter { abs(Int($0) - Int($1)) > 60 }.count
        #expect(changed > 1000 && changed < plain.count / 2)
    }

    /// The three-plane scene rendered before and after a known camera rotation, with the attitudes a phone
    /// would have reported: the sensor block and its comparison with the vision path.
    @Test func sensorAndComparisonBlocks() throws {
        let textures = CLI.packageRoot.appendingPathComponent(".cache/opencv-samples").path
        let scene = try SyntheticScene.threePlanes(textureDirectory: textures)
        let camera = CameraIntrinsics(fx: 700, fy: 700, cx: 319.5, cy: 239.5)
        let size = ImageSize(width: 640, height: 480)
        let truth = Matrix3.rotation(axis: SIMD3(0.3, -1, 0.2), angle: 5 * .pi / 180)
        let reference = try CLI.temporaryFile("ref.png", SceneRenderer.render(scene, camera: camera, size: size).encoded(as: .png))
        let current = try CLI.temporaryFile("cur.png", SceneRenderer.render(scene, camera: camera, rotation: truth, size: size).encoded(as: .png))
        // Portrait back camera: camera-from-device diag(1, −1, −1); q1 = q0 · Cᵀ Rᵀ C with q0 the identity.
        let c = Matrix3([1, 0, 0, 0, -1, 0, 0, 0, -1])
        let q1 = Quaternion(rotationMatrix: c.transposed * truth.transposed * c)
        let run = try CLI.run(["pose", "--reference", reference, "--current", current, "--intrinsics", "700,700,319.5,239.5",
                               "--reference-attitude", "1,0,0,0", "--current-attitude", "\(q1.w),\(q1.x),\(q1.y),\(q1.z)", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let json = try #require(run.json)
        let sensor = try #require(json["sensor"] as? [String: Any])
        let rows = try #require(sensor["rotation"] as? [[Double]])
        #expect(Matrix3.angleDegrees(between: Matrix3(rows: rows), and: truth) < 1e-5)
        let point = try #require(sensor["navigationPoint"] as? [String: Double])
        #expect(point["x"] != nil && point["y"] != nil)
        #expect((sensor["quadrilateral"] as? [[Double]])?.count == 4)
        let comparison = try #require(json["comparison"] as? [String: Any])
        #expect(try #require(comparison["rotationAngleDegrees"] as? Double) < 1)
        #expect(try #require(comparison["quadrilateralErrorPixels"] as? Double) < 2)

        let human = try CLI.run(["pose", "--reference", reference, "--current", current, "--intrinsics", "700,700,319.5,239.5",
                                 "--reference-attitude", "1,0,0,0", "--current-attitude", "\(q1.w),\(q1.x),\(q1.y),\(q1.z)"])
        #expect(human.stdout.contains("sensor     rotation 5.00°"))
        #expect(human.stdout.contains("agreement  rotations differ by"))
    }

    /// A 1-pixel-wide or -high image has no features: "could not estimate" with the counts (exit 3), not an
    /// internal error from OpenCV's assertions (AKAZE's setSize, ORB's resize).
    @Test(arguments: [(1, 300), (300, 1), (1, 1)])
    func onePixelImagesCannotBeEstimated(width: Int, height: Int) throws {
        let thin = try CLI.temporaryFile("thin.png", Image(width: width, height: height, channels: 1,
                                                           pixels: (0..<(width * height)).map { UInt8($0 % 251) }).encoded(as: .png))
        let graf1 = CLI.sample("graf1.png")
        for detector in ["akaze", "orb", "sift"] {
            let run = try CLI.run(["pose", "--reference", graf1, "--current", thin, "--detector", detector])
            #expect(run.status == 3, "\(detector) \(width)x\(height): \(run.stderr)")
            #expect(run.stderr.contains("too few matches: 0 (need 10)") && run.stderr.contains("current 0"), "\(run.stderr)")
        }
    }

    /// Damaged image data reaches stderr only as rephoto's own one line, never as libjpeg's or libpng's.
    @Test func decoderMessagesStayOffStderr() throws {
        let jpeg = try Data(contentsOf: URL(fileURLWithPath: CLI.sample("Blender_Suzanne2.jpg")))
        let cut = try CLI.temporaryFile("cut.jpg", jpeg.prefix(jpeg.count / 2) + jpeg.dropFirst(jpeg.count / 2 + 7))
        let run = try CLI.run(["pose", "--reference", CLI.sample("Blender_Suzanne1.jpg"), "--current", cut, "--json"])
        #expect(run.status == 0 && run.stderr.isEmpty, "\(run.stderr)")
        #expect((run.json?["warnings"] as? [String])?.contains { $0.contains("Corrupt JPEG data") } == true)
        let strict = try CLI.run(["pose", "--reference", CLI.sample("Blender_Suzanne1.jpg"), "--current", cut, "--set", "strictDecoding=true"])
        #expect(strict.status == 2 && strict.stderr.filter { $0 == "\n" }.count == 1 && strict.stderr.contains("damaged image data"), "\(strict.stderr)")
        var png = try Data(contentsOf: URL(fileURLWithPath: CLI.sample("graf1.png")))
        png[try #require(png.range(of: Data("IDAT".utf8))).upperBound + 200] ^= 0xFF
        let flipped = try CLI.run(["pose", "--reference", CLI.sample("graf1.png"), "--current", try CLI.temporaryFile("flip.png", png)])
        #expect(flipped.status == 2 && flipped.stderr.filter { $0 == "\n" }.count == 1 && !flipped.stderr.contains("libpng"), "\(flipped.stderr)")
        // Valid chunk checksums over a broken zlib stream got past the CRC walk to libpng, which printed its error.
        let zlib = Fixtures.packageRoot.appendingPathComponent("Tests/fixtures/fuzz/image-png-valid-crc-bad-zlib.png").path
        let inflate = try CLI.run(["pose", "--reference", zlib, "--current", CLI.sample("graf3.png")])
        #expect(inflate.status == 2 && inflate.stderr == "rephoto: \(zlib): corrupt PNG: IDAT: invalid literal/lengths set\n", "\(inflate.stderr)")
        // OpenCV's other decoders throw inside imdecode, which wrote "imdecode_(''): can't read data" to std::cerr.
        let pgm = try Data(contentsOf: Fixtures.packageRoot.appendingPathComponent("Tests/fixtures/formats/source.bmp"))
        let bmp = try CLI.run(["pose", "--reference", try CLI.temporaryFile("half.bmp", pgm.prefix(pgm.count / 2)), "--current", CLI.sample("graf3.png")])
        #expect(bmp.status == 2 && bmp.stderr.filter { $0 == "\n" }.count == 1 && !bmp.stderr.contains("imdecode"), "\(bmp.stderr)")
    }

    /// Too little signal in the images, but attitudes given: exit 3 still, and the JSON carries the sensor path's
    /// guidance with `vision: null` and the reason. Its rotation is the angle between the two attitudes.
    @Test func sensorPathSurvivesAVisionFailure() throws {
        let (q0, q1) = ([0.9, 0.1, 0.3, 0.2985], [0.92, 0.1, 0.28, 0.2533])
        let run = try CLI.run(["pose", "--reference", CLI.sample("graf1.png"), "--current", CLI.sample("HappyFish.jpg"), "--json",
                               "--reference-attitude", q0.map { "\($0)" }.joined(separator: ","),
                               "--current-attitude", q1.map { "\($0)" }.joined(separator: ",")])
        #expect(run.status == 3, "\(run.stderr)")
        let json = try #require(run.json)
        #expect(json["vision"] is NSNull && json["schemaVersion"] as? Int == 2)
        let failure = try #require(json["visionFailure"] as? [String: Any])
        #expect(failure["code"] as? String == "estimation_failed" && (failure["message"] as? String)?.contains("too few matches") == true)
        let norm = { (q: [Double]) in q.map { $0 / (q.reduce(0) { $0 + $1 * $1 }).squareRoot() } }
        let dot = abs(zip(norm(q0), norm(q1)).reduce(0) { $0 + $1.0 * $1.1 })
        let expected = 2 * acos(min(1, dot)) * 180 / .pi
        let sensor = try #require(json["sensor"] as? [String: Any])
        #expect(abs((sensor["rotationDegrees"] as? Double ?? 0) - expected) < 1e-6, "\(sensor["rotationDegrees"] ?? "nil") vs \(expected)")
        // Without attitudes the same pair is an error envelope, as before.
        let plain = try CLI.run(["pose", "--reference", CLI.sample("graf1.png"), "--current", CLI.sample("HappyFish.jpg"), "--json"])
        #expect(plain.status == 3 && (plain.json?["error"] as? [String: Any])?["code"] as? String == "estimation_failed")
        #expect(plain.json?["schemaVersion"] as? Int == 2)
    }

    /// Real quaternions and coordinates often start with a minus sign; they are values, not options.
    @Test func negativeNumbersAreValues() throws {
        let run = try CLI.run(["pose", "--reference", CLI.sample("graf1.png"), "--current", CLI.sample("graf3.png"),
                               "--intrinsics", "700,700,400,320", "--reference-intrinsics", "700,700,400,320",
                               "--reference-attitude", "-0.5,0.5,0.5,0.5", "--current-attitude", "-0.5,0.5,0.5,0.5", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let sensor = try #require(run.json?["sensor"] as? [String: Any])
        #expect(try #require(sensor["rotationDegrees"] as? Double) < 1e-6)
        let synth = try CLI.run(["synth", "--out", SequenceCommandTests.directory(), "--frames", "2", "--width", "160", "--height", "120",
                                 "--heading", "-30", "--yaw-offset", "-2", "--reference-brightness", "-10"])
        #expect(synth.status == 0, "\(synth.stderr)")
        // Every option takes the next word as its value: a negative number reaches the range check, and a file
        // named like an option is a file (both were "Missing value for '--x'").
        let opacity = try CLI.run(["align", "--reference", CLI.sample("graf1.png"), "--current", CLI.sample("graf3.png"),
                                   "--opacity", "-0.5", "--out", SequenceCommandTests.directory() + "/a.png"])
        #expect(opacity.status == 2 && opacity.stderr.contains("--opacity -0.5") && !opacity.stderr.contains("Missing value"), "\(opacity.stderr)")
        // Decimal only, as every other number option (a hex float was taken, found by probing).
        let hex = try CLI.run(["align", "--reference", CLI.sample("graf1.png"), "--current", CLI.sample("graf3.png"),
                               "--opacity", "0x1p-1", "--out", SequenceCommandTests.directory() + "/a.png"])
        #expect(hex.status == 2 && hex.stderr.contains("'0x1p-1' is not a finite decimal number"), "\(hex.stderr)")
        let folder = SequenceCommandTests.directory()
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let dashed = folder + "/-h.png"
        try FileManager.default.copyItem(atPath: CLI.sample("graf1.png"), toPath: dashed)
        let named = try CLI.run(["pose", "--reference", "-h.png", "--current", CLI.sample("graf3.png"), "--json"], directory: folder)
        #expect(named.status == 0 && (named.json?["counts"] as? [String: Any])?["inliersHomography"] as? Int ?? 0 > 100, "\(named.stderr)")
    }

    /// ArgumentParser's multi-line messages arrive whole, on one line: the list of choices is not cut off.
    @Test func choiceErrorsListTheChoicesOnOneLine() throws {
        let run = try CLI.run(["pose", "--reference", CLI.sample("graf1.png"), "--current", CLI.sample("graf3.png"), "--attitude-frame", "north"])
        #expect(run.status == 2)
        #expect(run.stderr.filter { $0 == "\n" }.count == 1)
        #expect(run.stderr.contains("one of the following: xArbitraryZVertical, xArbitraryCorrectedZVertical, xMagneticNorthZVertical, xTrueNorthZVertical, androidRotationVector, androidGameRotationVector"), "\(run.stderr)")
    }

    static func grey(_ name: String) throws -> String {
        let image = try Image(width: 320, height: 240, channels: 1, pixels: [UInt8](repeating: 128, count: 320 * 240))
        return try CLI.temporaryFile(name, image.encoded(as: .png))
    }

    static func badInputs() throws -> [(String, [String], Int32, String)] {
        let graf1 = CLI.sample("graf1.png"), graf3 = CLI.sample("graf3.png")
        let jpeg = try Data(contentsOf: URL(fileURLWithPath: CLI.sample("Blender_Suzanne1.jpg")))
        let truncated = try CLI.temporaryFile("cut.jpg", jpeg.prefix(jpeg.count / 3))
        let empty = try CLI.temporaryFile("empty.png", Data())
        let text = try CLI.temporaryFile("notes.jpg", Data("not an image at all".utf8))
        let calibration = CLI.packageRoot.appendingPathComponent("calibration/opencv-sample-640x480.yml").path
        let badConfig = try CLI.temporaryFile("c.json", Data(#"{"matching": {"ratoi": 0.7}}"#.utf8))
        let bomb = try CLI.temporaryFile("bomb.yaml", Data(Fixtures.yamlAliasBomb.utf8))
        let greyA = try grey("a.png"), greyB = try grey("b.png")
        // A named pipe no process writes to: opening it waited forever (probe: --config, --calibration).
        let fifo = try Scratch.directory().appendingPathComponent("settings.yml").path
        guard mkfifo(fifo, 0o600) == 0 else { throw CocoaError(.fileWriteUnknown) }
        let loop = try Scratch.directory().appendingPathComponent("loop.jpg").path
        try FileManager.default.createSymbolicLink(atPath: loop, withDestinationPath: loop)
        return [
            // Said "is a directory, not an image".
            ("image link loop", ["--reference", loop, "--current", graf3], 2, "\(loop): cannot open (Too many levels of symbolic links)"),
            // One line, whatever the name holds: a newline split the message, an ESC reached the terminal (probe).
            // (--json's message keeps the name as it is: JSON escapes it.)
            ("control characters", ["--reference", "/no/a\nb\u{1B}[31m.jpg", "--current", graf3], 2, "[31m.jpg: no such file"),
            ("config FIFO", ["--reference", graf1, "--current", graf3, "--config", fifo], 2, "\(fifo): the config must be an object of settings"),
            ("calibration FIFO", ["--reference", graf1, "--current", graf3, "--calibration", fifo], 2, "\(fifo) is empty"),
            ("missing file", ["--reference", "/no/such.jpg", "--current", graf3], 2, "/no/such.jpg: no such file"),
            ("empty file", ["--reference", graf1, "--current", empty], 2, "empty file (0 bytes)"),
            ("not an image", ["--reference", text, "--current", graf3], 2, "not a JPEG, PNG, HEIC/HEIF, TIFF, WebP, BMP, PNM or JPEG 2000 image (19 bytes"),
            ("truncated", ["--reference", graf1, "--current", truncated], 2, "truncated JPEG"),
            ("huge", ["--reference", graf1, "--current", graf3, "--max-pixels", "100000"], 2, "image is 800x640 = 0.5 MP, over the limit of 100000 pixels (maxPixels)"),
            ("calibration size", ["--reference", graf1, "--current", graf3, "--calibration", calibration], 2, "calibration is for 640x480 but the image is 800x640"),
            ("calibration missing", ["--reference", graf1, "--current", graf3, "--calibration", "/no/cal.yml"], 2, "/no/cal.yml: no such calibration file"),
            ("intrinsics", ["--reference", graf1, "--current", graf3, "--intrinsics", "700,700,320"], 2, "intrinsics '700,700,320' must be four finite decimal numbers fx,fy,cx,cy"),
            ("reference intrinsics", ["--reference", graf1, "--current", graf3, "--intrinsics", "700,700,399.5,319.5", "--reference-intrinsics", "unknown,"], 2,
             "--reference-intrinsics: intrinsics 'unknown,' must be four finite decimal numbers fx,fy,cx,cy, or unknown (an old photo whose camera nobody knows)"),
            ("reference principal point", ["--reference", graf1, "--current", graf3, "--intrinsics", "700,700,399.5,319.5", "--reference-intrinsics", "700,700,1e9,300"], 2,
             "the reference's camera: intrinsics: principal point (1000000000, 300) lies outside the 800x640 image"),
            ("telescope intrinsics", ["--reference", graf1, "--current", graf3, "--intrinsics", "1000000,1000000,399.5,319.5"], 2,
             "the reference's camera: intrinsics: focal length 1000000 px gives a field of view of 0.0458° across the 800 px side, outside 1-170°"),
            ("both cameras", ["--reference", graf1, "--current", graf3, "--intrinsics", "1,1,1,1", "--calibration", calibration], 2, "not both"),
            ("detector", ["--reference", graf1, "--current", graf3, "--detector", "surf"], 2, "surf"),
            // Took 3.9 GB and 9-19 s before: ORB enlarged the image 81x before its pyramid.
            ("ORB enlargement", ["--reference", graf1, "--current", graf3, "--detector", "orb", "--set", "features.orb.firstLevel=4", "--set", "features.orb.scaleFactor=3"], 2,
             "features.orb.firstLevel = 4 with features.orb.scaleFactor = 3 enlarges the image 81x before detection"),
            ("missing option", ["--reference", graf1], 2, "--current"),
            ("config key", ["--reference", graf1, "--current", graf3, "--config", badConfig], 2, "unknown key 'ratoi'"),
            ("config alias bomb", ["--reference", graf1, "--current", graf3, "--config", bomb], 2, "bomb.yaml: settings file has more than 100000 values, counting each copy a YAML alias makes"),
            ("no features", ["--reference", greyA, "--current", greyB], 3, "too few matches: 0 (need 10); keypoints: reference 0, current 0"),
            ("NaN attitude", ["--reference", graf1, "--current", graf3, "--reference-attitude", "nan,0,0,0", "--current-attitude", "1,0,0,0"], 2,
             "attitude 'nan,0,0,0' must be four finite decimal numbers w,x,y,z"),
            ("hexadecimal attitude", ["--reference", graf1, "--current", graf3, "--reference-attitude", "0x1,0,0,0", "--current-attitude", "1,0,0,0"], 2,
             "attitude '0x1,0,0,0' must be four finite decimal numbers w,x,y,z"),
            ("zero attitude", ["--reference", graf1, "--current", graf3, "--reference-attitude", "1,0,0,0", "--current-attitude", "0,0,0,0"], 2,
             "has zero length"),
            ("non-unit attitude", ["--reference", graf1, "--current", graf3, "--reference-attitude", "2,0,0,0", "--current-attitude", "1,0,0,0"], 2,
             "has norm 2, not within 1 % of 1"),
            ("one attitude", ["--reference", graf1, "--current", graf3, "--current-attitude", "1,0,0,0"], 2, "give both --reference-attitude and --current-attitude"),
            ("orientation", ["--reference", graf1, "--current", graf3, "--orientation", "sideways"], 2, "sideways"),
            ("drawing format", ["--reference", graf1, "--current", graf3, "--draw", "/tmp/overlay.gif"], 2, "--draw /tmp/overlay.gif must end in .jpg, .jpeg or .png"),
            ("orientation alone", ["--reference", graf1, "--current", graf3, "--orientation", "landscapeLeft", "--attitude-frame", "xTrueNorthZVertical"], 2,
             "--orientation, --attitude-frame describe attitudes: give --reference-attitude and --current-attitude too"),
            ("frames", ["--reference", graf1, "--current", graf3, "--reference-attitude", "1,0,0,0", "--current-attitude", "1,0,0,0",
                        "--reference-attitude-frame", "xTrueNorthZVertical", "--attitude-frame", "androidRotationVector"], 2, "do not share a heading origin"),
        ]
    }

    @Test func badInputsGiveOneLineAndTheirExitCode() throws {
        for (name, arguments, status, message) in try Self.badInputs() {
            let run = try CLI.run(["pose"] + arguments)
            #expect(run.status == status, "\(name): exit \(run.status), stderr \(run.stderr)")
            #expect(run.stderr.hasPrefix("rephoto: ") && run.stderr.filter { $0 == "\n" }.count == 1, "\(name): \(run.stderr)")
            #expect(run.stderr.contains(message), "\(name): \(run.stderr)")
            #expect(!run.stderr.unicodeScalars.contains { $0.value == 0x1B }, "\(name): \(run.stderr)")
            if name == "control characters" { #expect(run.stderr.contains("/no/a\\nb\\u{1B}[31m.jpg: no such file"), "\(run.stderr)") }
            #expect(run.stdout.isEmpty, "\(name)")

            let json = try CLI.run(["pose"] + arguments + ["--json"])
            #expect(json.status == status, "\(name) --json")
            let error = try #require(json.json?["error"] as? [String: String], "\(name): \(json.stdout)")
            #expect(error["kind"] == (status == 3 ? "estimation_failed" : "bad_input"))
            #expect(error["message"]?.contains(message) == true, "\(name)")
        }
    }

    /// An old photo from another camera: the bundled synthetic reference shrunk to 0.7 (its focal length is then exactly
    /// 0.7 x 391.64 px, the principal point at its centre). Told the reference's camera is unknown, the focal length is
    /// found within 2 %, the principal point within its prior of the centre, and the rotation within 1° of the truth in
    /// frames.csv; assumed to be the phone's camera (what rephoto did), the translation is confidently wrong.
    @Test func anOldPhotoOfUnknownCameraIsPosedWithItsEstimatedFocalLength() throws {
        let sequence = Fixtures.packageRoot.appendingPathComponent("datasets/synth-approach")
        let reference = try Image(contentsOfFile: sequence.appendingPathComponent("reference.jpg").path)
        let old = try Scratch.directory().appendingPathComponent("old.png").path
        try reference.resized(width: 336, height: 252).write(to: old, format: .png)
        let truth = try #require(try FrameSequence.load(from: sequence).frames.first { $0.file == "frame-0000.jpg" }).truth
        let intrinsics = "391.6444049109095,391.6444049109095,239.5,179.5"
        let base = ["pose", "--reference", old, "--current", sequence.appendingPathComponent("frame-0000.jpg").path, "--intrinsics", intrinsics, "--json"]

        let unknown = try CLI.run(base + ["--reference-intrinsics", "unknown"])
        #expect(unknown.status == 0, "\(unknown.stderr)")
        let json = try #require(unknown.json)
        let camera = try #require(json["referenceCamera"] as? [String: Any])
        let focal = try #require(camera["fx"] as? Double)
        #expect(abs(focal - 0.7 * 391.6444049109095) / (0.7 * 391.6444049109095) < 0.02, "\(camera)")
        #expect(camera["estimated"] as? Bool == true && camera["model"] as? String == "fundamental")
        // Estimated under a prior of 4 % of the longer side (13 px) about the centre, where it truly is.
        #expect(abs((camera["cx"] as? Double ?? 0) - 167.5) < 13 && abs((camera["cy"] as? Double ?? 0) - 125.5) < 13, "\(camera)")
        // Its sigma covers the error (within 2 %) without being vague: the floor (pose.referenceFocal.minSigmaPercent, 2.5 %)
        // where the residuals say less, at most 3 %.
        let sigma = camera["focalSigmaPercent"] as? Double ?? .infinity
        #expect(sigma >= ReferenceFocalConfig().minSigmaPercent && sigma <= 3, "\(camera)")
        #expect(abs((camera["zoom"] as? Double ?? 0) - 1) < 0.03, "the same field of view: \(camera)")
        let pose = try #require(json["pose"] as? [String: Any])
        let rotation = Matrix3(rows: try #require(pose["rotation"] as? [[Double]]))
        #expect(GroundTruthErrors.rotationError(estimate: rotation, truth: try #require(truth.rotation)) < 1)
        // The forward translation and the focal length are coupled: a translation is reported only when the focal
        // length's 1 sigma turns it by at most pose.maxTranslationSigma (5°), so it is within two of those of the truth
        // (8° with the principal point estimated, the focal length 0.8 % off), or reported uncertain.
        if let t = pose["translation"] as? [Double] {
            #expect(GroundTruthErrors.translationDirectionError(estimate: SIMD3(t[0], t[1], t[2]), truth: try #require(truth.translation)) < 10)
        } else {
            #expect(pose["translationUndetermined"] as? String == "uncertain", "\(pose)")
            #expect((json["warnings"] as? [String])?.contains { $0.hasPrefix("translation direction undetermined: the reference's focal length ±") } == true)
        }

        let assumed = try #require(try CLI.run(base).json)
        let wrong = try #require((assumed["pose"] as? [String: Any])?["translation"] as? [Double])
        #expect(GroundTruthErrors.translationDirectionError(estimate: SIMD3(wrong[0], wrong[1], wrong[2]), truth: try #require(truth.translation)) > 30)

        let both = try CLI.run(base + ["--reference-intrinsics", "unknown", "--reference-calibration", "x.yml"])
        #expect(both.status == 2 && both.stderr.contains("give either --reference-calibration or --reference-intrinsics unknown"), "\(both.stderr)")
        let alone = try CLI.run(["pose", "--reference", old, "--current", old, "--reference-intrinsics", "unknown"])
        #expect(alone.status == 2 && alone.stderr.contains("--reference-intrinsics unknown needs the current camera"), "\(alone.stderr)")
    }
}

/// `rephoto pose --points`: marks guide matching and are reported; a malformed file is bad input naming its line.
@Suite struct PosePointsCommandTests {
    @Test func marksAreUsedAndReportedAndBadFilesRefused() throws {
        // Graf is a plane: its published homography gives exact marks.
        let published = try Fixtures.graf13()
        let points = try Fixtures.temporaryFile("graf-points.csv", try Fixtures.grafMarks())
        let run = try CLI.run(["pose", "--reference", CLI.sample("graf1.png"), "--current", CLI.sample("graf3.png"), "--points", points, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let json = try #require(run.json)
        let marks = try #require(json["marks"] as? [String: Any])
        #expect(marks["count"] as? Int == 5 && marks["guided"] as? Bool == true && marks["largestPixels"] is NSNull)
        #expect((json["warnings"] as? [String])?.contains("the marked points were not checked: no pose to check them against") == true)
        let rows = try #require(json["homography"] as? [[Double]])
        #expect(GroundTruthErrors.cornerError(estimate: Matrix3(rows: rows), truth: published, size: ImageSize(width: 800, height: 640)) < 2)
        // A person reading the summary is told the marks were used, and that nothing checked them.
        let human = try CLI.run(["pose", "--reference", CLI.sample("graf1.png"), "--current", CLI.sample("graf3.png"), "--points", points])
        #expect(human.stdout.contains("\nmarks      5 pairs, not checked (no pose to check them against); the pose from the pass they guided\n"), "\(human.stdout)")

        let bad = try Fixtures.temporaryFile("bad-points.csv", Data("\(MarkedPoints.header)\n1,2,3\n".utf8))
        let refused = try CLI.run(["pose", "--reference", CLI.sample("graf1.png"), "--current", CLI.sample("graf3.png"), "--points", bad])
        #expect(refused.status == 2 && refused.stderr.contains("bad-points.csv line 2: 3 fields, expected 4"), "\(refused.stderr)")
    }
}
