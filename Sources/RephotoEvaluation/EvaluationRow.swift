import RephotoKit
import RephotoData
import CSV
import Foundation

/// One evaluated frame: everything `frames.csv` of an evaluation holds. Column names are a documented,
/// stable contract (docs/evaluation.md).
public struct EvaluationRow: Equatable, Sendable {
    public var sequence = ""
    /// Position of the frame in its sequence's frames.csv (0-based), for a deterministic order.
    public var index = 0
    public var file = ""
    public var referenceFile = ""
    public var failed = false
    public var failureKind: String?
    public var failureReason: String?
    /// The pose gate's cause when it refused the pose (`PoseRefusal.Cause`), whether or not the frame failed.
    public var poseRefusal: String?
    /// Why an estimated pose has no translation (`UndeterminedTranslation`).
    public var translationUndetermined: String?
    public var keypointsReference: Double?
    public var keypointsCurrent: Double?
    public var matches: Double?
    public var inliersHomography: Double?
    public var inliersEssential: Double?
    public var rotationOnly: Bool?
    public var rotationDegrees: Double?
    public var rotationErrorDegrees: Double?
    public var translationErrorDegrees: Double?
    public var translationErrorUnsignedDegrees: Double?
    /// max(rotation, translation) error against the truth that exists; failures and undetermined
    /// translations count as 180° (Image Matching Challenge).
    public var pairErrorDegrees: Double?
    public var cornerErrorPixels: Double?
    public var afdPixels: Double?
    public var score: Double?
    public var displacementPercent: Double?
    public var aligned: Bool?
    public var sensorRotationDegrees: Double?
    public var sensorVisionAngleDegrees: Double?
    public var sensorRotationErrorDegrees: Double?
    public var quadrilateralErrorPixels: Double?
    /// A reference of unknown camera: its estimated focal length's error against gt_reference_fx/fy, %, signed.
    public var referenceFocalErrorPercent: Double?
    /// What the reference is, `photo` or `print` (`ReferenceKind`), as the estimate used it.
    public var referenceKind: String?
    /// A reference of unknown camera: the camera estimated for this frame (or shared by the sequence's frames), its
    /// pixels, and its focal length's 1 sigma, %; empty while undetermined.
    public var referenceFx: Double?
    public var referenceFy: Double?
    public var referenceCx: Double?
    public var referenceCy: Double?
    public var referenceFocalSigmaPercent: Double?
    public var timeDetectReferenceMs: Double?
    public var timeDetectCurrentMs: Double?
    public var timeMatchMs: Double?
    public var timeHomographyMs: Double?
    public var timeEssentialMs: Double?
    public var timeTotalMs: Double?

    public init() {}

    public static let columns = [
        "sequence", "index", "file", "reference_file", "status", "failure_kind", "failure_reason", "pose_refusal",
        "keypoints_reference", "keypoints_current", "matches", "inliers_homography", "inliers_essential",
        "rotation_only", "translation_undetermined", "rotation_deg", "rotation_error_deg", "translation_error_deg", "translation_error_unsigned_deg", "pair_error_deg", "corner_error_px",
        "afd_px", "score", "displacement_percent", "aligned",
        "sensor_rotation_deg", "sensor_vision_angle_deg", "sensor_rotation_error_deg", "quad_error_px", "reference_focal_error_percent",
        "reference_kind", "reference_fx", "reference_fy", "reference_cx", "reference_cy", "reference_focal_sigma_percent",
        "time_detect_reference_ms", "time_detect_current_ms", "time_match_ms", "time_homography_ms", "time_essential_ms", "time_total_ms",
    ]

    /// Columns added after the first release of the format, optional when reading.
    static let laterColumns: Set<String> = ["translation_error_unsigned_deg", "pose_refusal", "translation_undetermined", "reference_focal_error_percent",
                                            "reference_kind", "reference_fx", "reference_fy", "reference_cx", "reference_cy",
                                            "reference_focal_sigma_percent"]

    public static let timingColumns = Set(columns.filter { $0.hasPrefix("time_") })
    static let countColumns: Set<String> = ["keypoints_reference", "keypoints_current", "matches", "inliers_homography", "inliers_essential"]
    /// Error columns whose sign carries meaning (the focal length too long or too short); every other error is at least 0.
    static let signedColumns: Set<String> = ["reference_focal_error_percent"]

    /// Numeric and boolean fields by column, for writing and reading generically.
    static var numbers: [(String, WritableKeyPath<EvaluationRow, Double?>)] { [
        ("keypoints_reference", \.keypointsReference), ("keypoints_current", \.keypointsCurrent), ("matches", \.matches),
        ("inliers_homography", \.inliersHomography), ("inliers_essential", \.inliersEssential), ("rotation_deg", \.rotationDegrees),
        ("rotation_error_deg", \.rotationErrorDegrees), ("translation_error_deg", \.translationErrorDegrees),
        ("translation_error_unsigned_deg", \.translationErrorUnsignedDegrees),
        ("pair_error_deg", \.pairErrorDegrees), ("corner_error_px", \.cornerErrorPixels), ("afd_px", \.afdPixels), ("score", \.score),
        ("displacement_percent", \.displacementPercent), ("sensor_rotation_deg", \.sensorRotationDegrees),
        ("sensor_vision_angle_deg", \.sensorVisionAngleDegrees), ("sensor_rotation_error_deg", \.sensorRotationErrorDegrees),
        ("quad_error_px", \.quadrilateralErrorPixels), ("reference_focal_error_percent", \.referenceFocalErrorPercent),
        ("reference_fx", \.referenceFx), ("reference_fy", \.referenceFy), ("reference_cx", \.referenceCx), ("reference_cy", \.referenceCy),
        ("reference_focal_sigma_percent", \.referenceFocalSigmaPercent), ("time_detect_reference_ms", \.timeDetectReferenceMs),
        ("time_detect_current_ms", \.timeDetectCurrentMs), ("time_match_ms", \.timeMatchMs), ("time_homography_ms", \.timeHomographyMs),
        ("time_essential_ms", \.timeEssentialMs), ("time_total_ms", \.timeTotalMs),
    ] }
    static var flags: [(String, WritableKeyPath<EvaluationRow, Bool?>)] { [("rotation_only", \.rotationOnly), ("aligned", \.aligned)] }

    func value(_ column: String) -> String {
        switch column {
        case "sequence": return sequence
        case "index": return String(index)
        case "file": return file
        case "reference_file": return referenceFile
        case "status": return failed ? "failed" : "ok"
        case "failure_kind": return failureKind ?? ""
        case "failure_reason": return failureReason ?? ""
        case "pose_refusal": return poseRefusal ?? ""
        case "translation_undetermined": return translationUndetermined ?? ""
        case "reference_kind": return referenceKind ?? ""
        default:
            if let (_, path) = Self.numbers.first(where: { $0.0 == column }) {
                guard let v = self[keyPath: path] else { return "" }
                // Counts are whole numbers: 1108, not 1108.0.
                return Self.countColumns.contains(column) && v.rounded() == v && abs(v) < 1e15 ? String(Int(v)) : "\(v)"
            }
            if let (_, path) = Self.flags.first(where: { $0.0 == column }) { return self[keyPath: path].map { $0 ? "true" : "false" } ?? "" }
            return ""
        }
    }

    public static func csv(_ rows: [EvaluationRow], dropping: Set<String> = []) throws -> String {
        let columns = Self.columns.filter { !dropping.contains($0) }
        return try CSVText.make([columns] + rows.map { row in columns.map(row.value) })
    }

    /// One row as a frames.csv line (no header), newline-terminated.
    public static func csvLine(_ row: EvaluationRow) throws -> String {
        try CSVText.make([columns.map(row.value)])
    }

    public static func parse(_ text: String, path: String) throws -> [EvaluationRow] {
        let reader: CSVReader
        do {
            reader = try CSVReader(string: text, hasHeaderRow: true)
        } catch {
            throw RephotoError.badInput("\(path): not an evaluation frames.csv (empty, or not readable as CSV)")
        }
        // Columns added later may be missing from older files: they read as empty.
        guard let header = reader.headerRow, Set(columns).subtracting(Self.laterColumns).isSubset(of: header) else {
            throw RephotoError.badInput("\(path) line 1: not an evaluation frames.csv (columns differ)")
        }
        // Shard files are inputs to a merge: a value no evaluation writes would pass into the summary as if
        // measured (a negative error scored mAA 1, NaN and infinity broke the JSON half-way through writing).
        try checkUniqueColumns(header, path: path)
        let position = Dictionary(header.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        var rows: [EvaluationRow] = []
        var seen = Set<[String]>()
        var line = 1
        while let fields = reader.next() {
            line += 1
            if fields.count == 1 && fields[0].isEmpty { continue }
            guard fields.count == header.count else { throw RephotoError.badInput("\(path) line \(line): \(fields.count) fields, the header has \(header.count)") }
            func cell(_ name: String) -> String { position[name].map { fields[$0] } ?? "" }
            var row = EvaluationRow()
            row.sequence = cell("sequence")
            guard let index = Int(cell("index")) else { throw RephotoError.badInput("\(path) line \(line): index '\(cell("index"))' is not a number") }
            row.index = index
            row.file = cell("file")
            row.referenceFile = cell("reference_file")
            guard ["ok", "failed"].contains(cell("status")) else {
                throw RephotoError.badInput("\(path) line \(line): status '\(cell("status"))' is neither ok nor failed")
            }
            row.failed = cell("status") == "failed"
            guard seen.insert([row.sequence, row.file, row.referenceFile, String(index)]).inserted else {
                throw RephotoError.badInput("\(path) line \(line): frame \(row.sequence)/\(row.file) appears twice")
            }
            row.failureKind = cell("failure_kind").isEmpty ? nil : cell("failure_kind")
            row.failureReason = cell("failure_reason").isEmpty ? nil : cell("failure_reason")
            row.poseRefusal = cell("pose_refusal").isEmpty ? nil : cell("pose_refusal")
            row.translationUndetermined = cell("translation_undetermined").isEmpty ? nil : cell("translation_undetermined")
            if !cell("reference_kind").isEmpty {
                guard ReferenceKind(rawValue: cell("reference_kind")) != nil else {
                    throw RephotoError.badInput("\(path) line \(line): column 'reference_kind': '\(cell("reference_kind").prefix(40))' is neither photo nor print")
                }
                row.referenceKind = cell("reference_kind")
            }
            for (name, path) in numbers {
                let text = cell(name)
                if text.isEmpty { continue }
                let nonNegative = name.contains("error") && !signedColumns.contains(name)
                guard let v = decimalNumber(text), !(v < 0 && nonNegative) else {
                    throw RephotoError.badInput("\(path) line \(line): column '\(name)': '\(text)' is not a finite number\(nonNegative ? " at least 0" : "")")
                }
                row[keyPath: path] = v
            }
            for (name, path) in flags where !cell(name).isEmpty { row[keyPath: path] = cell(name) == "true" }
            rows.append(row)
        }
        return rows
    }
}
