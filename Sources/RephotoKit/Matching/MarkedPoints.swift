import Foundation

/// Pairs of points a person marked where automatic matching fails (`--points`): the same spot in the reference and in
/// the current image, in each file's full-resolution pixels. They are never taken on trust: a homography through
/// them guides a second matching pass (`Matcher.guided`), the pose comes from the matches that pass yields, and every
/// mark is then checked against that pose (`inconsistent`).
public struct MarkedPoints: Equatable, Sendable {
    public var reference: [Point2]
    public var current: [Point2]
    /// Where they came from (a file, a request's part), named in every error about them.
    public var name: String?

    /// The fewest marks a guide needs: a homography takes four, and one more tells a slip from the scene.
    public static let minimumCount = 5
    public static let maximumCount = 1000
    /// The CSV header of a points file.
    public static let header = "reference_x,reference_y,current_x,current_y"

    public init(reference: [Point2], current: [Point2], name: String? = nil) {
        precondition(reference.count == current.count)
        self.reference = reference
        self.current = current
        self.name = name
    }

    /// "`name`: " before a message about them, or nothing.
    var source: String { name.map { "\($0): " } ?? "" }

    public var count: Int { reference.count }

    /// A points file: the header `reference_x,reference_y,current_x,current_y`, then one pair a line; blank lines and
    /// lines starting with `#` are skipped. `name` names the file in errors.
    public static func parse(_ text: String, name: String) throws -> MarkedPoints {
        var reference: [Point2] = [], current: [Point2] = []
        var sawHeader = false
        // A byte-order mark (what spreadsheets write first) is not part of the header.
        let text = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
        for (number, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard sawHeader else {
                guard fields.joined(separator: ",") == header else {
                    throw RephotoError.badInput("\(name): the first line must be the header \(header), not '\(line.prefix(80))'")
                }
                sawHeader = true
                continue
            }
            guard fields.count == 4 else {
                throw RephotoError.badInput("\(name) line \(number + 1): \(fields.count) fields, expected 4 (\(header))")
            }
            // Digits, sign, point and exponent only: Double() read "10\0garbage" as 10 and "0x10" as 16.
            let numeric = fields.allSatisfy { !$0.isEmpty && $0.allSatisfy { "0123456789+-.eE".contains($0) } }
            let values = fields.map { numeric ? Double($0) : nil }
            guard values.allSatisfy({ $0?.isFinite == true }) else {
                throw RephotoError.badInput("\(name) line \(number + 1): '\(line.prefix(80))' is not four finite numbers")
            }
            guard reference.count < maximumCount else {
                throw RephotoError.badInput("\(name): more than \(maximumCount) marked pairs")
            }
            reference.append(Point2(x: values[0]!, y: values[1]!))
            current.append(Point2(x: values[2]!, y: values[3]!))
        }
        guard sawHeader else { throw RephotoError.badInput("\(name) is empty: expected the header \(header) and at least \(minimumCount) pairs") }
        return MarkedPoints(reference: reference, current: current, name: name)
    }

    /// Reads a points file of at most 1 MB.
    public static func read(_ path: String) throws -> MarkedPoints {
        let data: Data
        do {
            data = try Image.readFile(path, maxBytes: 1 << 20, image: false)
        } catch let error as RephotoError where error.reason == .tooLarge {
            throw RephotoError.badInput("\(path): a points file is at most 1 MB (1,000 pairs)")
        }
        return try parse(data, name: path)
    }

    /// Parses a points file's bytes, which must be UTF-8.
    public static func parse(_ data: Data, name: String) throws -> MarkedPoints {
        guard let text = String(data: data, encoding: .utf8) else { throw RephotoError.badInput("\(name) is not UTF-8 text") }
        return try parse(text, name: name)
    }

    /// Refuses too few marks, marks outside their images, and a pair given twice (within a pixel on both sides): it
    /// would count towards the minimum while checking nothing more. One point marked twice with different partners
    /// is left to the fit, which names the one that does not fit.
    public func check(referenceSize: ImageSize, currentSize: ImageSize) throws {
        guard count >= Self.minimumCount else {
            throw RephotoError.badInput("\(source)\(count) marked pairs: at least \(Self.minimumCount) are needed")
        }
        func outside(_ p: Point2, _ size: ImageSize) -> Bool {
            !(p.x >= -0.5 && p.y >= -0.5 && p.x <= Double(size.width) - 0.5 && p.y <= Double(size.height) - 0.5)
        }
        for i in 0..<count {
            if outside(reference[i], referenceSize) {
                throw RephotoError.badInput("\(source)marked pair \(i + 1): reference point (\(fmt(reference[i].x, 7)), \(fmt(reference[i].y, 7))) lies outside the \(referenceSize.width)x\(referenceSize.height) reference (-0.5 to width - 0.5)")
            }
            if outside(current[i], currentSize) {
                throw RephotoError.badInput("\(source)marked pair \(i + 1): current point (\(fmt(current[i].x, 7)), \(fmt(current[i].y, 7))) lies outside the \(currentSize.width)x\(currentSize.height) current image (-0.5 to width - 0.5)")
            }
        }
        for i in 0..<count {
            for j in 0..<i where reference[i].distance(to: reference[j]) < 1 && current[i].distance(to: current[j]) < 1 {
                throw RephotoError.badInput("\(source)marked pairs \(j + 1) and \(i + 1) are one pair, (\(fmt(reference[i].x, 7)), \(fmt(reference[i].y, 7))) -> (\(fmt(current[i].x, 7)), \(fmt(current[i].y, 7))), given twice: mark each pair once")
            }
        }
    }

    /// The marks as correspondences (no keypoint frames).
    public var correspondences: Correspondences {
        Correspondences(matches: [], reference: reference, current: current)
    }

    /// The homography through all the marks (least squares): the guide.
    func guide() throws -> Matrix3 {
        do {
            return try HomographyEstimate.estimate(correspondences, config: RobustConfig(method: .leastSquares, threshold: 1, confidence: 0.99, maxIterations: 1)).matrix
        } catch let error as RephotoError where error.kind == .estimationFailed {
            throw RephotoError.badInput("\(source)the \(count) marked pairs fit no homography to guide matching (\(error.message)): are some the same point, or all on one line?")
        }
    }

    /// Each mark's distance from what `model` says (pixels in the current image): its epipolar distance under a pose
    /// with a translation, or its transfer error under a homography (a rotation's, or the fitted one).
    public enum Model {
        case essential(rotation: Matrix3, translation: SIMD3<Double>, reference: CameraIntrinsics, current: CameraIntrinsics)
        case homography(Matrix3)
    }

    public func errors(under model: Model) -> [Double] {
        switch model {
        case .homography(let h):
            return (0..<count).map { i in
                let p = h * SIMD3(reference[i].x, reference[i].y, 1)
                return Point2(x: p.x / p.z, y: p.y / p.z).distance(to: current[i])
            }
        case .essential(let r, let t, let k1, let k2):
            let skew = Matrix3(rows: [[0, -t.z, t.y], [t.z, 0, -t.x], [-t.y, t.x, 0]])
            guard let k1i = k1.matrix.inverse, let k2i = k2.matrix.inverse else { return [Double](repeating: .infinity, count: count) }
            // Lens distortion is left out: a hand's tap is coarser than it.
            let f = k2i.transposed * (skew * r) * k1i
            return (0..<count).map { i in
                // The distance of the current point from its epipolar line.
                let line = f * SIMD3(reference[i].x, reference[i].y, 1)
                let norm = (line.x * line.x + line.y * line.y).squareRoot()
                guard norm > 0 else { return .infinity }
                return abs(line.x * current[i].x + line.y * current[i].y + line.z) / norm
            }
        }
    }

    /// The 1-based numbers of the marks farther than `tolerance` pixels from `model`, with their distances.
    public func inconsistent(under model: Model, tolerance: Double) -> [(number: Int, pixels: Double)] {
        errors(under: model).enumerated().filter { !($0.element <= tolerance) }.map { ($0.offset + 1, $0.element) }
    }
}

/// How marked points served a result (`marks` in docs/json-output.md).
public struct MarkedPointsReport: Encodable, Equatable, Sendable {
    /// The marks given.
    public var count: Int
    /// Whether the pose came from the pass the marks guided (false: the matches alone gave a pose that fits them).
    public var guided: Bool
    /// The largest distance of a mark from the pose (its epipolar line), current pixels; nil when the pose's
    /// translation is undetermined (not rotation-only), which leaves nothing to check them against.
    @NullEncoded public var largestPixels: Double?
    /// The worker's: true when the marks are those kept with a stored reference for this retake (docs/server.md);
    /// absent when they came with the request.
    public var kept: Bool?
}
