import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation

@Suite struct FrameSequenceTests {
    static let sample = FrameSequence(
        manifest: SequenceManifest(name: "round trip_1.0-b", intrinsics: SequenceIntrinsics(fx: 700.25, fy: 701, cx: 319.5, cy: 239.5, distortion: [0.1, -0.01, 0, 0]),
                                   reference: "ref.jpg", cameraOrientation: .landscapeRight, attitudeFrame: .androidRotationVector,
                                   provenance: "unit test", license: "CC0"),
        frames: [
            SequenceFrame(file: "ref.jpg", attitude: Quaternion(w: 0.1, x: 0.2, y: 0.3, z: 0.9273618495495704)),
            SequenceFrame(file: "a, b.jpg", timestamp: 0.1 + 0.2, attitude: Quaternion(w: 1, x: 1e-17, y: -0, z: 0.001),
                          truthRotation: Quaternion(axis: SIMD3(1, 2, 3), angle: 0.1), truthTranslation: SIMD3(0.1, -0.2, 3)),
            SequenceFrame(file: "c.jpg", truthHomography: Matrix3([1.1, 0.01, -3.3333333333333335, 0, 0.9, 7, 1e-5, 2e-5, 1])),
        ])

    @Test func writesAndReadsBackExactly() throws {
        let dir = try Scratch.directory()
        try Self.sample.write(to: dir)
        let back = try FrameSequence.load(from: dir)
        #expect(back.manifest == Self.sample.manifest)
        #expect(back.frames == Self.sample.frames)
        let first = try String(contentsOf: dir.appendingPathComponent("frames.csv"), encoding: .utf8)
        try back.write(to: dir)
        #expect(try String(contentsOf: dir.appendingPathComponent("frames.csv"), encoding: .utf8) == first)
        #expect(first.hasPrefix("file,timestamp,qw,qx,qy,qz,gt_qw,"))
        #expect(back.currentFrames.map(\.file) == ["a, b.jpg", "c.jpg"])
        #expect(back.attitude(of: "ref.jpg") == Quaternion(w: 0.1, x: 0.2, y: 0.3, z: 0.9273618495495704))
        // Truth is normalised for use: unit translation.
        #expect(abs(length(try #require(back.frames[1].truth.translation)) - 1) < 1e-15)
    }

    /// The sample as a pair list of `frames` (each naming its reference), changed by `change`, written to a fresh folder.
    static func pairList(_ frames: [SequenceFrame], _ change: (inout FrameSequence) -> Void = { _ in }) throws -> (FrameSequence, URL) {
        var pairs = Self.sample
        pairs.manifest.reference = nil
        pairs.frames = frames
        change(&pairs)
        let dir = try Scratch.directory()
        try pairs.write(to: dir)
        return (pairs, dir)
    }

    @Test func pairListRoundTrips() throws {
        let (pairs, dir) = try Self.pairList([SequenceFrame(file: "b.jpg", referenceFile: "a.jpg"), SequenceFrame(file: "c.jpg", referenceFile: "b.jpg")])
        let back = try FrameSequence.load(from: dir)
        #expect(back.frames == pairs.frames)
        #expect(back.referenceFile(for: back.frames[1]) == "b.jpg")
    }

    /// Old references: "referenceIntrinsics": "unknown" or the reference camera's own, and each row's true reference
    /// camera in gt_reference_fx, fy, cx, cy; both read back exactly.
    @Test func referenceCamerasRoundTrip() throws {
        for setting in [ReferenceIntrinsics.unknown, .known(SequenceIntrinsics(fx: 900.5, fy: 901, cx: 399.5, cy: 260.25, distortion: []))] {
            let (pairs, dir) = try Self.pairList([SequenceFrame(file: "b.jpg", referenceFile: "old-a.jpg"), SequenceFrame(file: "c.jpg", referenceFile: "old-a.jpg")]) {
                $0.manifest.referenceIntrinsics = setting
                $0.frames[0].truthReferenceCamera = SIMD4(900.25, 901.5, 394.75, 261.5)
            }
            let back = try FrameSequence.load(from: dir)
            #expect(back.manifest == pairs.manifest)
            #expect(back.frames == pairs.frames)
            #expect(back.frames[0].truth.referenceFocal == 900.875)
            #expect(back.referenceCameraUnknown == (setting == .unknown))
            #expect(try back.referenceCamera() == (setting == .unknown ? nil : CameraIntrinsics(fx: 900.5, fy: 901, cx: 399.5, cy: 260.25)))
            #expect(try String(contentsOf: dir.appendingPathComponent("frames.csv"), encoding: .utf8)
                .contains(",gt_h33,reference_file,gt_reference_fx,gt_reference_fy,gt_reference_cx,gt_reference_cy\n"))
        }
        let dir = try Scratch.directory()
        try Data(#"{"name": "x", "reference": "a.jpg", "referenceIntrinsics": "unknown"}"#.utf8).write(to: dir.appendingPathComponent("sequence.json"))
        try Data("file\nb.jpg\n".utf8).write(to: dir.appendingPathComponent("frames.csv"))
        let error = #expect(throws: RephotoError.self) { try FrameSequence.load(from: dir) }
        #expect(error?.message.contains("referenceIntrinsics \"unknown\" needs the frames' camera") == true, "\(error?.message ?? "")")
        try Data(#"{"name": "x", "reference": "a.jpg", "intrinsics": {"fx": 1, "fy": 1, "cx": 1, "cy": 1}, "referenceIntrinsics": "unkown"}"#.utf8)
            .write(to: dir.appendingPathComponent("sequence.json"))
        let typo = #expect(throws: RephotoError.self) { try FrameSequence.load(from: dir) }
        #expect(typo?.message.contains("referenceIntrinsics 'unkown' must be \"unknown\" or an object") == true, "\(typo?.message ?? "")")
        // The word in any case, as on the CLI.
        for word in ["Unknown", "UNKNOWN"] {
            try Data(#"{"name": "x", "reference": "a.jpg", "intrinsics": {"fx": 1, "fy": 1, "cx": 1, "cy": 1}, "referenceIntrinsics": "\#(word)"}"#.utf8)
                .write(to: dir.appendingPathComponent("sequence.json"))
            #expect(try FrameSequence.load(from: dir).referenceCameraUnknown, "\(word)")
        }
    }

    /// Marked points beside a pair list: points/<reference stem>--<frame stem>.csv is read for its row, exactly, and
    /// named in its errors; a row without one has none; a points file that names no pair is refused by name, and one
    /// whose extension is .CSV is told to write it in lower case (it was passed over).
    @Test func pointsFilesBelongToTheirPair() throws {
        let (_, dir) = try Self.pairList([SequenceFrame(file: "b.jpg", referenceFile: "old-a.jpg"), SequenceFrame(file: "c.jpg", referenceFile: "old-a.jpg")])
        let points = dir.appendingPathComponent("points")
        try FileManager.default.createDirectory(at: points, withIntermediateDirectories: true)
        let truthReference: [Point2] = (0..<5).map { (k: Int) -> Point2 in Point2(x: Double(10 * k + 1), y: Double(7 * k + 2) + 0.5) }
        let truthCurrent: [Point2] = (0..<5).map { (k: Int) -> Point2 in Point2(x: Double(9 * k + 3), y: Double(8 * k + 4)) }
        let rows: [String] = zip(truthReference, truthCurrent).map { (a: Point2, b: Point2) -> String in "\(a.x),\(a.y),\(b.x),\(b.y)" }
        let lines = [MarkedPoints.header] + rows
        try Data(lines.joined(separator: "\n").utf8).write(to: points.appendingPathComponent("old-a--b.csv"))
        let back = try FrameSequence.load(from: dir)
        let marks = try #require(try back.marks(for: back.frames[0]))
        #expect(marks.reference == truthReference && marks.current == truthCurrent)
        #expect(try back.marks(for: back.frames[1]) == nil)
        let outside = #expect(throws: RephotoError.self) { try marks.check(referenceSize: ImageSize(width: 30, height: 30), currentSize: ImageSize(width: 100, height: 100)) }
        #expect(outside?.message.hasPrefix("\(points.path)/old-a--b.csv: marked pair 4: reference point (31, 23.5) lies outside") == true, "\(outside?.message ?? "")")
        try Data(lines.joined(separator: "\n").utf8).write(to: points.appendingPathComponent("old-a-b.csv"))
        let stray = #expect(throws: RephotoError.self) { try FrameSequence.load(from: dir) }
        #expect(stray?.message == "\(points.path)/old-a-b.csv names no pair of this sequence: a points file is points/<reference stem>--<frame stem>.csv")
        try FileManager.default.removeItem(at: points.appendingPathComponent("old-a-b.csv"))
        try Data(lines.joined(separator: "\n").utf8).write(to: points.appendingPathComponent("old-a--c.CSV"))
        let upper = #expect(throws: RephotoError.self) { try FrameSequence.load(from: dir) }
        #expect(upper?.message == "\(points.path)/old-a--c.CSV names no pair of this sequence: its extension must be .csv, in lower case")
    }

    static let header = "file,timestamp,qw,qx,qy,qz,gt_qw,gt_qx,gt_qy,gt_qz,gt_tx,gt_ty,gt_tz"

    @Test(arguments: [
        ("\(header)\na.jpg,0,1,0,0,0,,,,,,,\nb.jpg,abc,1,0,0,0,,,,,,,\n", "frames.csv line 3: column 'timestamp': 'abc' is not a finite number"),
        ("\(header)\na.jpg,0,1,0,0,,,,,,,,\n", "frames.csv line 2: columns qw, qx, qy, qz must be all set or all empty"),
        ("\(header)\na.jpg,0,1,0,0,0\n", "frames.csv line 2: 6 fields, the header has 13"),
        ("\(header)\na.jpg,\"0,1,0,0,0,,,,,,,\nb.jpg,0,1,0,0,0,,,,,,,\n", "frames.csv line 2: a quoted field is not closed"),
        // On the last line without a newline the parser took it silently (found by probing).
        ("\(header)\na.jpg,0,1,0,0,0,,,,,,,\nb.jpg,0,1,0,0,0,,,,,,,\"0.5", "frames.csv line 3: a quoted field is not closed"),
        ("file,foo\na.jpg,1\n", "frames.csv line 1: unknown column 'foo'"),
        ("name,qw\na.jpg,1\n", "frames.csv line 1: the header must name a 'file' column"),
        ("\(header)\na.jpg,0,2,0,0,0,,,,,,,\n", "frames.csv line 2: columns qw, qx, qy, qz: attitude quaternion (2, 0, 0, 0) has norm 2"),
        ("\(header)\na.jpg,0,nan,0,0,0,,,,,,,\n", "frames.csv line 2: column 'qw': 'nan' is not a finite number"),
        // Swift's Double("0x1") is 1: a hexadecimal cell was taken as a unit quaternion (found by probing).
        ("\(header)\na.jpg,0,0x1,0,0,0,,,,,,,\n", "frames.csv line 2: column 'qw': '0x1' is not a finite number"),
        ("\(header)\na.jpg,0,1,0,0,0,,,,,1e,0,0\n", "frames.csv line 2: column 'gt_tx': '1e' is not a finite number"),
        ("\(header)\na.jpg,0,,,,,1,0,0,0,0,0,0\n", "frames.csv line 2: ground-truth translation is zero"),
        // Its length overflows: the unit direction came out zero and every error against it 0° (found by probing).
        ("\(header)\na.jpg,0,,,,,1,0,0,0,1e308,0,0\n", "frames.csv line 2: ground-truth translation (1e+308, 0.0, 0.0) is too large to have a length"),
        ("\(header)\n,0,,,,,,,,,,,\n", "frames.csv line 2: column 'file' is empty"),
        ("\(header)\na.jpg,0,,,,,,,,,,,\nimgs/../../b.jpg,0,,,,,,,,,,,\n", "frames.csv line 3: image 'imgs/../../b.jpg' lies outside the sequence folder"),
        ("file,gt_h11,gt_h12,gt_h13,gt_h21,gt_h22,gt_h23,gt_h31,gt_h32,gt_h33\na.jpg,1,0,0,0,1,0,0,0,0\n", "frames.csv line 2: ground-truth homography is singular"),
        // Its determinant overflowed to infinity and passed (found by probing).
        ("file,gt_h11,gt_h12,gt_h13,gt_h21,gt_h22,gt_h23,gt_h31,gt_h32,gt_h33\na.jpg,1e300,0,0,0,1,0,0,0,1\n", "frames.csv line 2: ground-truth homography is singular"),
        ("file,gt_qw,gt_qx,gt_qy,gt_qz,gt_qw\na.jpg,1,0,0,0,0.5\n", "frames.csv line 1: column 'gt_qw' appears twice"),
        ("", "frames.csv: empty, no header row"),
        ("file,gt_reference_fx,gt_reference_fy,gt_reference_cx,gt_reference_cy\na.jpg,900,,400,300\n",
         "frames.csv line 2: columns gt_reference_fx, gt_reference_fy, gt_reference_cx, gt_reference_cy must be all set or all empty"),
        ("file,gt_reference_fx,gt_reference_fy,gt_reference_cx,gt_reference_cy\na.jpg,-900,900,400,300\n",
         "frames.csv line 2: gt_reference_fx and gt_reference_fy must be positive"),
        // Every focal-length error against it was NaN, and evaluate died writing its summary (found by probing).
        ("file,gt_reference_fx,gt_reference_fy,gt_reference_cx,gt_reference_cy\na.jpg,1e308,1e308,400,300\n",
         "frames.csv line 2: gt_reference_fx, fy, cx, cy: focal lengths fx=1e+308 fy=1e+308 px are outside 1...1000000: not a camera's"),
        ("file,gt_reference_fx,gt_reference_fy,gt_reference_cx,gt_reference_cy\na.jpg,1e-310,1e-310,400,300\n",
         "frames.csv line 2: gt_reference_fx, fy, cx, cy: focal lengths fx=1e-310 fy=1e-310 px are outside 1...1000000: not a camera's"),
    ])
    func malformedRowsNameFileAndLine(csv: String, expected: String) throws {
        let dir = try Scratch.directory()
        try Data(#"{"name": "x", "reference": "a.jpg"}"#.utf8).write(to: dir.appendingPathComponent("sequence.json"))
        try Data(csv.utf8).write(to: dir.appendingPathComponent("frames.csv"))
        let error = #expect(throws: RephotoError.self) { try FrameSequence.load(from: dir) }
        #expect(error?.kind == .badInput)
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(dir.path) == true)
    }

    /// An evaluation keeps a few KB per frame, and the file cap alone admitted 2.4 million short rows (probe).
    @Test func aSequenceHoldsAtMostItsFrameLimit() throws {
        let dir = try Scratch.directory()
        try Data(#"{"name": "x", "reference": "a.jpg"}"#.utf8).write(to: dir.appendingPathComponent("sequence.json"))
        let rows = (0...FrameSequence.maxFrames).map { "f\($0).jpg\n" }.joined()
        try Data(("file\n" + rows).utf8).write(to: dir.appendingPathComponent("frames.csv"))
        let error = #expect(throws: RephotoError.self) { try FrameSequence.load(from: dir) }
        #expect(error?.message.hasSuffix("frames.csv line \(FrameSequence.maxFrames + 2): more than \(FrameSequence.maxFrames) frames in one sequence: split it into several") == true,
                "\(error?.message ?? "")")
    }

    @Test(arguments: [
        (#"{"reference": "a.jpg"}"#, "missing key 'name'"),
        (#"{"name": "x", "reference": "a.jpg", "refrence": 1}"#, "unknown key 'refrence'"),
        (#"{"name": "x", "reference": "a.jpg", "cameraOrientation": "sideways"}"#,
         "at 'cameraOrientation': 'sideways' is not one of portrait, portraitUpsideDown, landscapeLeft, landscapeRight"),
        (#"{"name": "x", "reference": "a.jpg", "intrinsics": 3}"#, "at 'intrinsics': expected an object"),
        (#"{"name": "x", "reference": "a.jpg", "calibration": "c.yml", "intrinsics": {"fx": 1, "fy": 1, "cx": 1, "cy": 1}}"#, "not both"),
        (#"{"name": "x"}"#, "no reference, and frames.csv line 2 names none"),
        // The name becomes an output folder: no way out of it, no nesting, nothing hidden.
        (#"{"name": "../../escaped", "reference": "a.jpg"}"#, "name '../../escaped' must be 1 to 128 ASCII letters"),
        (#"{"name": "a/b", "reference": "a.jpg"}"#, "name 'a/b' must be"),
        (#"{"name": ".hidden", "reference": "a.jpg"}"#, "name '.hidden' must be"),
        // A sequence is its folder (probe: a frame named ../../etc/passwd was read).
        (#"{"name": "x", "reference": "../../etc/passwd"}"#, "image '../../etc/passwd' lies outside the sequence folder"),
        (#"{"name": "x", "reference": "/etc/passwd"}"#, "image '/etc/passwd' lies outside the sequence folder"),
        // Found by probing: an empty reference was the folder itself, a calibration could leave the folder, and
        // intrinsics took any key.
        (#"{"name": "x", "reference": ""}"#, "reference is empty"),
        (#"{"name": "x", "reference": "a.jpg", "calibration": "../../outside.yml"}"#, "calibration '../../outside.yml' lies outside the sequence folder"),
        (#"{"name": "x", "reference": "a.jpg", "intrinsics": {"fx": 1, "fy": 1, "cx": 1, "cy": 1, "bogus": 1}}"#, "at 'intrinsics.bogus': unknown key 'bogus'"),
        (#"{"name": "x", "reference": NaN}"#, "not valid JSON. (Invalid value around character 27.)"),
        (#"{"name": "x", "reference": "a.jpg", "intrinsics": {"fx": -1, "fy": 1, "cx": 1, "cy": 1}}"#, "focal lengths must be positive"),
        ("not json", "sequence.json"),
        (#"{"name": "x", "reference": "a.jpg", "reference": "b.jpg"}"#, "sequence.json line 1: key 'reference' given twice in one mapping"),
    ])
    func malformedManifests(json: String, expected: String) throws {
        let dir = try Scratch.directory()
        try Data(json.utf8).write(to: dir.appendingPathComponent("sequence.json"))
        try Data("file\nb.jpg\n".utf8).write(to: dir.appendingPathComponent("frames.csv"))
        let error = #expect(throws: RephotoError.self) { try FrameSequence.load(from: dir) }
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
    }

    @Test func missingFilesAreReported() throws {
        let dir = try Scratch.directory()
        let error = #expect(throws: RephotoError.self) { try FrameSequence.load(from: dir) }
        #expect(error?.message.contains("sequence.json") == true)
    }
}

@Suite struct SequenceDiscoveryTests {
    /// Linked folders are followed, a link loop ends, and a sequence reached twice is found once.
    @Test func followsLinksOnceWithoutLooping() throws {
        let fm = FileManager.default
        let root = try Scratch.directory()
        let data = try Scratch.directory()
        for name in ["a", "b"] {
            try fm.createDirectory(at: data.appendingPathComponent(name), withIntermediateDirectories: true)
            try Data("{}".utf8).write(to: data.appendingPathComponent("\(name)/sequence.json"))
        }
        try fm.createDirectory(at: root.appendingPathComponent("own"), withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: root.appendingPathComponent("own/sequence.json"))
        try fm.createSymbolicLink(at: root.appendingPathComponent("linked"), withDestinationURL: data)
        try fm.createSymbolicLink(at: root.appendingPathComponent("linked-again"), withDestinationURL: data.appendingPathComponent("a"))
        try fm.createSymbolicLink(at: data.appendingPathComponent("a/loop"), withDestinationURL: data)
        let found = try SequenceDiscovery.find([root.path]).map { $0.path.replacingOccurrences(of: root.path + "/", with: "") }
        // Depth first in name order: a is reached through "linked" before "linked-again".
        #expect(found == ["linked/a", "linked/b", "own"], "\(found)")
    }

    /// A tree nested deeper than the limit is refused, naming the folder, not searched partly.
    @Test func aTooDeepTreeIsRefused() throws {
        let root = try Scratch.directory()
        let deep = (0...SequenceDiscovery.maxDepth).reduce(root) { url, _ in url.appendingPathComponent("d") }
        try FileManager.default.createDirectory(at: deep, withIntermediateDirectories: true)
        let error = #expect(throws: RephotoError.self) { try SequenceDiscovery.find([root.path]) }
        #expect(error?.kind == .badInput)
        #expect(error?.message.hasPrefix(deep.path + ": folders nested more than 64 deep under \(root.path)") == true, "\(error?.message ?? "")")
        #expect(try SequenceDiscovery.find([root.appendingPathComponent("d").path]).isEmpty)
    }
}
