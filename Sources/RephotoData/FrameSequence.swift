import RephotoKit
import CSV
import Foundation

/// Intrinsics as written in a sequence manifest, for the frames' full resolution.
public struct SequenceIntrinsics: Codable, Equatable, Sendable {
    public var fx: Double
    public var fy: Double
    public var cx: Double
    public var cy: Double
    public var distortion: [Double]

    public init(fx: Double, fy: Double, cx: Double, cy: Double, distortion: [Double] = []) {
        self.fx = fx
        self.fy = fy
        self.cx = cx
        self.cy = cy
        self.distortion = distortion
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case fx, fy, cx, cy, distortion }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)  // as the manifest's own keys: "fx_" was taken silently
        let c = try decoder.container(keyedBy: CodingKeys.self)
        fx = try c.decode(Double.self, forKey: .fx)
        fy = try c.decode(Double.self, forKey: .fy)
        cx = try c.decode(Double.self, forKey: .cx)
        cy = try c.decode(Double.self, forKey: .cy)
        distortion = try c.decodeIfPresent([Double].self, forKey: .distortion) ?? []
    }

    public var camera: CameraIntrinsics { CameraIntrinsics(fx: fx, fy: fy, cx: cx, cy: cy, distortion: distortion) }
}

/// `sequence.json`: what a recorded (or generated) frame sequence is. Documented in datasets/README.md.
public struct SequenceManifest: Codable, Equatable, Sendable {
    public var name: String
    /// Calibration file, relative to the sequence folder (OpenCV FileStorage).
    public var calibration: String?
    public var intrinsics: SequenceIntrinsics?
    /// The reference frames' camera when it is not the frames' (`intrinsics`/`calibration`): its intrinsics, or
    /// "unknown" (old photos: estimated for each frame from its matches).
    public var referenceIntrinsics: ReferenceIntrinsics?
    /// "photo" or "print": an old print is matched with the old-photo treatment whatever is known of its camera. When
    /// absent: a print when `referenceIntrinsics` is "unknown", else detected (`FrameSequence.referenceKind`).
    public var referenceKind: ReferenceKind?
    /// File name of the reference frame; nil for a pair list (every row names its own reference).
    public var reference: String?
    public var cameraOrientation: ScreenOrientation
    public var attitudeFrame: AttitudeReferenceFrame
    public var provenance: String
    public var license: String

    public init(name: String, calibration: String? = nil, intrinsics: SequenceIntrinsics? = nil, reference: String?,
                cameraOrientation: ScreenOrientation = .portrait, attitudeFrame: AttitudeReferenceFrame = .xArbitraryZVertical,
                provenance: String, license: String) {
        self.name = name
        self.calibration = calibration
        self.intrinsics = intrinsics
        self.reference = reference
        self.cameraOrientation = cameraOrientation
        self.attitudeFrame = attitudeFrame
        self.provenance = provenance
        self.license = license
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, calibration, intrinsics, referenceIntrinsics, referenceKind, reference, cameraOrientation, attitudeFrame, provenance, license
    }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        calibration = try c.decodeIfPresent(String.self, forKey: .calibration)
        intrinsics = try c.decodeIfPresent(SequenceIntrinsics.self, forKey: .intrinsics)
        referenceIntrinsics = try c.decodeIfPresent(ReferenceIntrinsics.self, forKey: .referenceIntrinsics)
        if let text = try c.decodeIfPresent(String.self, forKey: .referenceKind) {
            guard let kind = ReferenceKind(rawValue: text) else {
                throw RephotoError.badInput("referenceKind '\(text.prefix(40))' must be \"photo\" or \"print\"")
            }
            referenceKind = kind
        }
        reference = try c.decodeIfPresent(String.self, forKey: .reference)
        cameraOrientation = try c.value(.cameraOrientation, or: .portrait)
        attitudeFrame = try c.value(.attitudeFrame, or: .xArbitraryZVertical)
        provenance = try c.value(.provenance, or: "")
        license = try c.value(.license, or: "")
    }
}

/// `referenceIntrinsics` in sequence.json: the reference camera's intrinsics (as `intrinsics`), or the string "unknown".
public enum ReferenceIntrinsics: Codable, Equatable, Sendable {
    case known(SequenceIntrinsics)
    case unknown

    public init(from decoder: Decoder) throws {
        if let text = try? decoder.singleValueContainer().decode(String.self) {
            guard CameraIntrinsics.namesUnknown(text) else {
                throw RephotoError.badInput("referenceIntrinsics '\(text.prefix(40))' must be \"unknown\" or an object {fx, fy, cx, cy}")
            }
            self = .unknown
        } else {
            self = .known(try SequenceIntrinsics(from: decoder))
        }
    }

    public func encode(to encoder: Encoder) throws {
        switch self {
        case .unknown:
            var c = encoder.singleValueContainer()
            try c.encode("unknown")
        case .known(let intrinsics):
            try intrinsics.encode(to: encoder)
        }
    }
}

/// One row of `frames.csv`, values as written (validated, not renormalised) so files round-trip exactly.
public struct SequenceFrame: Equatable, Sendable {
    public var file: String
    /// Seconds; nil when unknown.
    public var timestamp: Double?
    /// Phone attitude at capture (frame and orientation from the manifest); nil when not recorded.
    public var attitude: Quaternion?
    /// Ground truth relative to this row's reference, vision convention (X_current = R X_reference + t).
    public var truthRotation: Quaternion?
    /// Direction of t; nil when undetermined.
    public var truthTranslation: SIMD3<Double>?
    /// Reference pixels -> current pixels.
    public var truthHomography: Matrix3?
    /// Set in pair lists: this row's own reference frame.
    public var referenceFile: String?
    /// The true camera of this row's reference (fx, fy, cx, cy), for references of unknown camera.
    public var truthReferenceCamera: SIMD4<Double>?

    public init(file: String, timestamp: Double? = nil, attitude: Quaternion? = nil, truthRotation: Quaternion? = nil,
                truthTranslation: SIMD3<Double>? = nil, truthHomography: Matrix3? = nil, referenceFile: String? = nil, truthReferenceCamera: SIMD4<Double>? = nil) {
        self.file = file
        self.truthReferenceCamera = truthReferenceCamera
        self.timestamp = timestamp
        self.attitude = attitude
        self.truthRotation = truthRotation
        self.truthTranslation = truthTranslation
        self.truthHomography = truthHomography
        self.referenceFile = referenceFile
    }

    /// The truth in the form the estimator compares against (unit quaternion, unit translation).
    public var truth: GroundTruth {
        GroundTruth(rotation: truthRotation?.normalized.rotationMatrix, translation: truthTranslation.map { $0 / length($0) },
                    homography: truthHomography, referenceFocal: truthReferenceCamera.map { ($0.x + $0.y) / 2 })
    }
}

/// A frame sequence folder: `sequence.json`, `frames.csv`, and the frames' image files beside them.
public struct FrameSequence: Equatable, Sendable {
    public var manifest: SequenceManifest
    public var frames: [SequenceFrame]
    /// Folder the sequence was read from (file names resolve against it).
    public var directory: URL?

    public init(manifest: SequenceManifest, frames: [SequenceFrame], directory: URL? = nil) {
        self.manifest = manifest
        self.frames = frames
        self.directory = directory
    }

    static let attitudeColumns = ["qw", "qx", "qy", "qz"]
    static let rotationColumns = ["gt_qw", "gt_qx", "gt_qy", "gt_qz"]
    static let translationColumns = ["gt_tx", "gt_ty", "gt_tz"]
    static let homographyColumns = (1...3).flatMap { r in (1...3).map { c in "gt_h\(r)\(c)" } }
    static let referenceCameraColumns = ["gt_reference_fx", "gt_reference_fy", "gt_reference_cx", "gt_reference_cy"]
    static let columns = ["file", "timestamp"] + attitudeColumns + rotationColumns + translationColumns + homographyColumns
    static let optionalColumns = Set(columns + ["reference_file"] + referenceCameraColumns).subtracting(["file"])

    public func path(of file: String) -> String {
        (directory ?? URL(fileURLWithPath: ".")).appendingPathComponent(file).path
    }

    /// The frames to evaluate: every row except the reference's own (which only carries its attitude).
    public var currentFrames: [SequenceFrame] { frames.filter { $0.file != referenceFile(for: $0) } }

    /// The same sequence with at most `count` current frames (the first ones) and every reference row.
    public func limited(toFrames count: Int) -> FrameSequence {
        var kept = 0
        let frames = frames.filter { frame in
            if frame.file == referenceFile(for: frame) { return true }
            kept += 1
            return kept <= count
        }
        return FrameSequence(manifest: manifest, frames: frames, directory: directory)
    }

    /// The attitude recorded for a reference file, from its own row.
    public func attitude(of file: String) -> Quaternion? { frames.first { $0.file == file }?.attitude }

    /// The phone attitudes of a row and its reference in the manifest's frame and orientation; nil unless both
    /// were recorded.
    public func attitudes(for frame: SequenceFrame) throws -> AttitudePair? {
        guard let q1 = frame.attitude, let file = referenceFile(for: frame), let q0 = attitude(of: file) else { return nil }
        return AttitudePair(reference: try Attitude(quaternion: q0, frame: manifest.attitudeFrame, orientation: manifest.cameraOrientation),
                            current: try Attitude(quaternion: q1, frame: manifest.attitudeFrame, orientation: manifest.cameraOrientation))
    }

    /// The points marked by hand for a row (datasets/README.md, "Marked points"): `points/<reference stem>--<frame
    /// stem>.csv` in the sequence's folder; nil when there is no such file.
    public func marks(for frame: SequenceFrame) throws -> MarkedPoints? {
        guard let reference = referenceFile(for: frame) else { return nil }
        func stem(_ file: String) -> String { URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent }
        let path = path(of: "points/\(stem(reference))--\(stem(frame.file)).csv")
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try MarkedPoints.read(path)
    }

    /// The reference file of a row: its own in a pair list, the manifest's otherwise.
    public func referenceFile(for frame: SequenceFrame) -> String? { frame.referenceFile ?? manifest.reference }

    /// The references' camera: the manifest's `referenceIntrinsics` when known, else the frames' (`camera()`); nil
    /// when unknown (`referenceCameraUnknown`) or when the frames have none.
    public func referenceCamera() throws -> CameraIntrinsics? {
        switch manifest.referenceIntrinsics {
        case .known(let intrinsics)?: return intrinsics.camera
        case .unknown?: return nil
        case nil: return try camera()
        }
    }

    /// The manifest says the references' camera is unknown (old photos).
    public var referenceCameraUnknown: Bool { manifest.referenceIntrinsics == .unknown }

    /// What the references are, one treatment for all: declared (`referenceKind`), a print when their camera is
    /// unknown, else detected on each reference (decoded as `features` reduces it) and settled by the majority (a tie:
    /// a photo), the evidence reported being the first reference's of that kind.
    public func referenceKind(features: FeatureConfig) throws -> ReferenceKindEvidence {
        if manifest.referenceKind != nil || referenceCameraUnknown {
            return .given(manifest.referenceKind, cameraUnknown: referenceCameraUnknown)
        }
        let files = Array(Set(frames.compactMap { referenceFile(for: $0) })).sorted()
        let found = try files.map { try ReferenceKindEvidence.detect(Image(contentsOfFile: path(of: $0), reducedFor: features)) }
        let prints = found.filter { $0.kind == .print }
        return prints.count * 2 > found.count ? prints[0] : found.first { $0.kind == .photo } ?? .given(nil, cameraUnknown: false)
    }

    /// Intrinsics for the frames: the calibration file (relative to the folder) or the manifest's intrinsics.
    public func camera() throws -> CameraIntrinsics? {
        if let calibration = manifest.calibration { return try CameraIntrinsics.load(from: path(of: calibration)) }
        return manifest.intrinsics?.camera
    }

    // MARK: reading

    public static func load(from directory: URL) throws -> FrameSequence {
        let manifestURL = directory.appendingPathComponent("sequence.json")
        // The manifest first: a broken one is named before a missing frames.csv is.
        let manifest = try parseManifest(try readSmallFile(manifestURL.path, limit: 1 << 20), path: manifestURL.path)
        let csvURL = directory.appendingPathComponent("frames.csv")
        return try assemble(manifest, frames: try readSmallFile(csvURL.path, limit: 64 << 20), directory: directory)
    }

    /// A sequence from the bytes of its sequence.json and frames.csv (named in errors as files of `directory`).
    public static func parse(manifest data: Data, frames csv: Data, directory: URL) throws -> FrameSequence {
        let manifest = try parseManifest(data, path: directory.appendingPathComponent("sequence.json").path)
        return try assemble(manifest, frames: csv, directory: directory)
    }

    static func parseManifest(_ data: Data, path manifestPath: String) throws -> SequenceManifest {
        let manifest: SequenceManifest
        do {
            manifest = try JSONDecoder().decode(SequenceManifest.self, from: data)
            try ConfigFile.refuseRepeatedKeys(data, what: manifestPath)
        } catch let error as RephotoError {
            throw error
        } catch let error as DecodingError {
            throw RephotoError.badInput("\(manifestPath): \(ConfigFile.describe(error, json: data))")
        } catch {
            throw RephotoError.badInput("\(manifestPath): cannot read (\(fileErrorReason(error)))")
        }
        return manifest
    }

    static func assemble(_ manifest: SequenceManifest, frames csv: Data, directory: URL) throws -> FrameSequence {
        let manifestPath = directory.appendingPathComponent("sequence.json").path
        let csvPath = directory.appendingPathComponent("frames.csv").path
        guard let text = String(data: csv, encoding: .utf8) else { throw RephotoError.badInput("\(csvPath): not UTF-8 text") }
        let frames = try parseFrames(text, path: csvPath, frame: manifest.attitudeFrame)
        let sequence = FrameSequence(manifest: manifest, frames: frames, directory: directory)
        try sequence.validate(manifestPath: manifestPath)
        return sequence
    }

    func validate(manifestPath: String) throws {
        try Self.checkName(manifest.name, place: manifestPath)
        if manifest.calibration != nil && manifest.intrinsics != nil {
            throw RephotoError.badInput("\(manifestPath): give calibration or intrinsics, not both")
        }
        if let i = manifest.intrinsics { try i.camera.validate("\(manifestPath): intrinsics") }
        if case .known(let i)? = manifest.referenceIntrinsics { try i.camera.validate("\(manifestPath): referenceIntrinsics") }
        if manifest.referenceIntrinsics == .unknown, manifest.intrinsics == nil, manifest.calibration == nil {
            throw RephotoError.badInput("\(manifestPath): referenceIntrinsics \"unknown\" needs the frames' camera (intrinsics or calibration) to estimate it from")
        }
        // An empty name is the folder itself (every row then failed as "is a directory", exit 3); a
        // calibration path leaves the folder as an image's would.
        if manifest.reference == "" { throw RephotoError.badInput("\(manifestPath): reference is empty: name the reference image, or leave it out for a pair list") }
        if manifest.calibration == "" { throw RephotoError.badInput("\(manifestPath): calibration is empty: name the calibration file, or leave it out") }
        if let reference = manifest.reference { try Self.checkInside(reference, place: manifestPath) }
        if let calibration = manifest.calibration { try Self.checkInside(calibration, place: manifestPath, what: "calibration") }
        if manifest.reference == nil, let row = frames.firstIndex(where: { $0.referenceFile == nil }) {
            throw RephotoError.badInput("\(manifestPath): no reference, and frames.csv line \(row + 2) names none (reference_file)")
        }
        // A reference's own row twice: which attitude counts would be chosen without a word. (A frame listed twice
        // is one answer: docs/evaluation.md.)
        var seen: [String: Int] = [:]
        for (row, frame) in frames.enumerated() where frame.file == referenceFile(for: frame) {
            if let first = seen[frame.file] {
                throw RephotoError.badInput("\(directory?.appendingPathComponent("frames.csv").path ?? "frames.csv"): the reference \(frame.file.visible) is listed twice (lines \(first + 2) and \(row + 2))")
            }
            seen[frame.file] = row
        }
        try checkMarkFiles()
    }

    /// A points file that names no pair of the sequence would be ignored without a word: refused, by name.
    func checkMarkFiles() throws {
        guard let folder = directory?.appendingPathComponent("points"),
              let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
        func stem(_ file: String) -> String { URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent }
        let pairs = Set(frames.compactMap { frame in referenceFile(for: frame).map { "\(stem($0))--\(stem(frame.file)).csv" } })
        // Any case of .csv: a pair's file saved as .CSV would otherwise be passed over in silence.
        if let stray = names.sorted().first(where: { $0.lowercased().hasSuffix(".csv") && !pairs.contains($0) }) {
            let hint = pairs.contains(String(stray.dropLast(4)) + ".csv") ? "its extension must be .csv, in lower case"
                : "a points file is points/<reference stem>--<frame stem>.csv"
            throw RephotoError.badInput("\(folder.path)/\(stray.prefix(120)) names no pair of this sequence: \(hint)")
        }
    }

    /// The check every reader applies to a sequence's name, for writers to apply before they write one (`synth
    /// --name`, `import --name`). The name becomes a folder of an evaluation's output (thumbnails/<name>/) and a
    /// frames.csv field: it must stay one plain name.
    public static func checkName(_ name: String, place: String) throws {
        guard !name.isEmpty else { throw RephotoError.badInput("\(place): name is empty") }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._- ")
        guard name.count <= 128, name.allSatisfy(allowed.contains), name.first != ".", name.first != " ", name.last != " " else {
            // Escaped and cut: a name with a newline or of a megabyte still makes one readable line.
            let shown = String(name.prefix(140).unicodeScalars.map { $0.escaped(asASCII: true) }.joined())
            throw RephotoError.badInput(
                "\(place): name '\(shown)' must be 1 to 128 ASCII letters, digits, '.', '_', '-' or inner spaces, not starting with '.'")
        }
    }

    /// A sequence is its folder: a frame named ../../../etc/passwd was read, and its bytes shown.
    static func checkInside(_ name: String, place: String, what: String = "image") throws {
        if name.hasPrefix("/") || name.split(separator: "/").contains("..") {
            throw RephotoError.badInput("\(place): \(what) '\(name)' lies outside the sequence folder: name files inside it, relative to it")
        }
    }

    /// The most rows one frames.csv may hold.
    public static let maxFrames = 200_000

    static func parseFrames(_ text: String, path: String, frame: AttitudeReferenceFrame) throws -> [SequenceFrame] {
        // An unclosed quote swallows the rest of the file into one field, and on the last line without a newline
        // the parser accepts it silently: quotes are checked first ("" inside a field toggles twice).
        var open: Int?
        var textLine = 1
        for byte in text.utf8 {
            if byte == UInt8(ascii: "\n") { textLine += 1 }
            if byte == UInt8(ascii: "\"") { open = open == nil ? textLine : nil }
        }
        if let open {
            throw RephotoError.badInput("\(path) line \(open): a quoted field is not closed (its quote runs on to the end of the file)")
        }
        let reader: CSVReader
        do {
            reader = try CSVReader(string: text, hasHeaderRow: true, trimFields: true)
        } catch {
            // CSV.swift's errors are enum case names (cannotReadHeaderRow): say it in words.
            let reason = "\(error)" == "cannotReadHeaderRow" ? "empty, no header row" : "not readable as UTF-8 CSV"
            throw RephotoError.badInput("\(path): \(reason)")
        }
        guard let header = reader.headerRow, header.contains("file") else {
            throw RephotoError.badInput("\(path) line 1: the header must name a 'file' column")
        }
        if let unknown = header.first(where: { !optionalColumns.contains($0) && $0 != "file" }) {
            throw RephotoError.badInput("\(path) line 1: unknown column '\(unknown)'")
        }
        try checkUniqueColumns(header, path: path)
        let index = Dictionary(header.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        var frames: [SequenceFrame] = []
        var line = 1
        while let row = reader.next() {
            line += 1
            if row.count == 1 && row[0].isEmpty { continue }  // blank line
            let place = "\(path) line \(line)"
            // An evaluation keeps a few KB per frame: the 64 MiB file cap alone let 2.4 million short rows through,
            // some 8 GB. An hour of 30 fps video is 108,000 frames.
            guard frames.count < maxFrames else {
                throw RephotoError.badInput("\(place): more than \(maxFrames) frames in one sequence: split it into several")
            }
            guard row.count == header.count else {
                throw RephotoError.badInput("\(place): \(row.count) fields, the header has \(header.count)")
            }
            func cell(_ name: String) -> String { index[name].map { row[$0] } ?? "" }
            func number(_ name: String) throws -> Double? {
                let text = cell(name)
                if text.isEmpty { return nil }
                guard let value = decimalNumber(text) else {
                    throw RephotoError.badInput("\(place): column '\(name)': '\(text)' is not a finite number")
                }
                return value
            }
            func group(_ names: [String]) throws -> [Double]? {
                let values = try names.map(number)
                if values.allSatisfy({ $0 == nil }) { return nil }
                guard values.allSatisfy({ $0 != nil }) else {
                    throw RephotoError.badInput("\(place): columns \(names.joined(separator: ", ")) must be all set or all empty")
                }
                return values.map { $0! }
            }
            let file = cell("file")
            guard !file.isEmpty else { throw RephotoError.badInput("\(place): column 'file' is empty") }
            try checkInside(file, place: place)
            var entry = SequenceFrame(file: file, timestamp: try number("timestamp"))
            func quaternion(_ names: [String]) throws -> Quaternion? {
                guard let q = try group(names) else { return nil }
                let value = Quaternion(w: q[0], x: q[1], y: q[2], z: q[3])
                do {
                    _ = try Attitude(quaternion: value, frame: frame)  // the same checks as any attitude input
                } catch let error as RephotoError {
                    throw error.prefixed("\(place): columns \(names.joined(separator: ", "))")
                }
                return value
            }
            entry.attitude = try quaternion(attitudeColumns)
            entry.truthRotation = try quaternion(rotationColumns)
            if let t = try group(translationColumns) {
                let v = SIMD3(t[0], t[1], t[2])
                guard length(v) > 0 else { throw RephotoError.badInput("\(place): ground-truth translation is zero (leave it empty when undetermined)") }
                // An overflowing length would make the unit direction zero, and every error against it 0°.
                guard length(v).isFinite else {
                    throw RephotoError.badInput("\(place): ground-truth translation (\(t[0]), \(t[1]), \(t[2])) is too large to have a length")
                }
                entry.truthTranslation = v
            }
            if let h = try group(homographyColumns) {
                let m = Matrix3(h)
                // Judged at unit scale: one entry of 1e300 made the determinant overflow past the check.
                let scale = m.elements.map(abs).max() ?? 0
                guard scale > 0, abs(m.scaled(by: 1 / scale).determinant) > 1e-12 else {
                    throw RephotoError.badInput("\(place): ground-truth homography is singular")
                }
                entry.truthHomography = m
            }
            if let k = try group(referenceCameraColumns) {
                guard k[0] > 0, k[1] > 0 else { throw RephotoError.badInput("\(place): gt_reference_fx and gt_reference_fy must be positive") }
                // Held to what any camera given is: a focal length of 1e308 made every error against it NaN.
                try CameraIntrinsics(fx: k[0], fy: k[1], cx: k[2], cy: k[3]).validate("\(place): gt_reference_fx, fy, cx, cy")
                entry.truthReferenceCamera = SIMD4(k[0], k[1], k[2], k[3])
            }
            let reference = cell("reference_file")
            if !reference.isEmpty { try checkInside(reference, place: place) }
            entry.referenceFile = reference.isEmpty ? nil : reference
            frames.append(entry)
        }
        if let error = reader.error { throw RephotoError.badInput("\(path) line \(line + 1): \(error)") }
        return frames
    }

    // MARK: writing

    /// Writes `sequence.json` and `frames.csv` into `directory` (image files are the caller's). Numbers are
    /// written in their shortest exact form, so reading back gives the same values.
    public func write(to directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try (encoder.encode(manifest) + Data("\n".utf8)).write(to: directory.appendingPathComponent("sequence.json"))
        try csv().write(to: directory.appendingPathComponent("frames.csv"), atomically: true, encoding: .utf8)
    }

    public func csv() throws -> String {
        let pairList = frames.contains { $0.referenceFile != nil }
        let referenceCameras = frames.contains { $0.truthReferenceCamera != nil }
        var rows = [Self.columns + (pairList ? ["reference_file"] : []) + (referenceCameras ? Self.referenceCameraColumns : [])]
        func text(_ v: Double?) -> String { v.map { "\($0)" } ?? "" }
        for f in frames {
            let q = f.attitude, r = f.truthRotation, t = f.truthTranslation
            var row = [f.file, text(f.timestamp)]
            row += [q?.w, q?.x, q?.y, q?.z].map(text)
            row += [r?.w, r?.x, r?.y, r?.z].map(text)
            row += [t?.x, t?.y, t?.z].map(text)
            row += f.truthHomography.map { $0.elements.map { "\($0)" } } ?? Array(repeating: "", count: 9)
            if pairList { row.append(f.referenceFile ?? "") }
            if referenceCameras {
                let k = f.truthReferenceCamera
                row += [k?.x, k?.y, k?.z, k?.w].map(text)
            }
            rows.append(row)
        }
        return try CSVText.make(rows)
    }
}
