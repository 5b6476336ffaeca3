import Foundation
import Yams

/// Reads files in OpenCV's FileStorage layouts (YAML, XML, JSON): calibrations (the calibration sample's keys or
/// the tutorial's) and single matrices (the samples' homographies), without OpenCV's parser, which crashes on deep nesting and hangs on some 27-byte YAML files
/// (scripts/fuzz). YAML and JSON go through Yams, XML through a small reader of OpenCV's XML; the file is checked for size, text and nesting before any of them runs.
package enum FileStorageReader {
    /// A parsed document: maps keep their key order, scalars stay text until a number is asked for.
    indirect enum Node: Equatable {
        case map([(String, Node)])
        case list([Node])
        case scalar(String)

        static func == (a: Node, b: Node) -> Bool {
            switch (a, b) {
            case let (.map(x), .map(y)): x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
            case let (.list(x), .list(y)): x == y
            case let (.scalar(x), .scalar(y)): x == y
            default: false
            }
        }

        subscript(key: String) -> Node? {
            if case .map(let entries) = self { return entries.first { $0.0 == key }?.1 }
            return nil
        }
    }

    package static let maxBytes = 1 << 20
    static let maxDepth = 32
    static let maxNodes = 100_000

    /// The intrinsics in `data` (the file at `path`, named in errors).
    static func parse(_ data: Data, path: String) throws -> CameraIntrinsics {
        guard !data.isEmpty else { throw RephotoError.badInput("\(path) is empty") }
        guard data.count <= maxBytes else {
            throw RephotoError.badInput("\(path) is \(data.count) bytes: too large for a calibration file (at most 1 MiB)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw RephotoError.badInput("\(path) is not UTF-8 text: not a calibration file", cause: .notCalibrationFile)
        }
        try checkShape(text, path: path)
        let root = try document(text, path: path)
        return try intrinsics(root, path: path)
    }

    /// Text only, and nested no deeper than `maxDepth` (flow brackets, XML elements or indentation levels):
    /// every parser below recurses per level.
    static func checkShape(_ text: String, path: String) throws {
        var depth = 0, indentDepth = 0
        var lineStart = true, indent = 0
        var indents: [Int] = []
        let scalars = Array(text.unicodeScalars)
        for (i, c) in scalars.enumerated() {
            if (c.value < 0x20 && c != "\n" && c != "\r" && c != "\t") || c.value == 0x7F {
                throw RephotoError.badInput("\(path) has a control character (0x\(String(format: "%02X", c.value))) at character \(i): not a text calibration file")
            }
            if c == "\n" {
                lineStart = true
                indent = 0
                continue
            }
            if lineStart && (c == " " || c == "\t") {
                indent += 1
                continue
            }
            if lineStart {
                lineStart = false
                while let last = indents.last, last > indent { indents.removeLast() }
                if indents.last != indent { indents.append(indent) }
                indentDepth = indents.count
            }
            let next = i + 1 < scalars.count ? scalars[i + 1] : "\0"
            if c == "[" || c == "{" || (c == "<" && next != "/" && next != "?" && next != "!") { depth += 1 }
            else if c == "]" || c == "}" || (c == "<" && next == "/") || (c == "/" && next == ">") { depth -= 1 }
            if depth > maxDepth || indentDepth > maxDepth {
                throw RephotoError.badInput("\(path) nests more than \(maxDepth) levels deep: not a calibration file", cause: .notCalibrationFile)
            }
        }
    }

    static func document(_ text: String, path: String) throws -> Node {
        let start = text.drop { $0.isWhitespace }.first
        if start == "<" { return try XMLDocument.parse(text, path: path) }
        // JSON goes through the YAML parser too: OpenCV's JSON writer prints numbers such as "0.", which JSON
        // parsers refuse and YAML reads. OpenCV writes "%YAML:1.0", which YAML 1.1 parsers reject as a
        // directive: that first line is dropped.
        var yaml = text
        if yaml.hasPrefix("%YAML") {
            yaml = yaml.firstIndex(of: "\n").map { String(yaml[yaml.index(after: $0)...]) } ?? ""
        }
        do {
            guard let root = try Yams.compose(yaml: yaml) else { throw RephotoError.badInput("\(path) is empty") }
            var budget = maxNodes
            return try node(yaml: root, path: path, depth: 0, budget: &budget)
        } catch let error as RephotoError {
            throw error
        } catch {
            throw RephotoError.badInput("\(path) is not YAML, XML or JSON that a calibration file could be (\(describe(error)))")
        }
    }

    /// A parser's error as one line without its internals.
    static func describe(_ error: Error) -> String {
        if let yaml = error as? YamlError {
            switch yaml {
            case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _):
                return "line \(mark.line): \(problem)" + (context.map { " \($0.text)" } ?? "")
            default:
                break
            }
        }
        let text = "\(error)"
        return String((text.split(separator: "\n").first ?? "unreadable").prefix(160))
    }

    /// `budget` counts nodes: YAML anchors let a 1 KB file stand for billions of nodes (the "billion laughs").
    static func node(yaml: Yams.Node, path: String, depth: Int, budget: inout Int) throws -> Node {
        guard depth <= maxDepth else { throw RephotoError.badInput("\(path) nests more than \(maxDepth) levels deep: not a calibration file", cause: .notCalibrationFile) }
        budget -= 1
        guard budget >= 0 else { throw RephotoError.badInput("\(path) holds more than \(maxNodes) values: not a calibration file", cause: .notCalibrationFile) }
        switch yaml {
        case .scalar(let scalar): return .scalar(scalar.string)
        case .sequence(let sequence):
            var items: [Node] = []
            for item in sequence { items.append(try node(yaml: item, path: path, depth: depth + 1, budget: &budget)) }
            return .list(items)
        case .mapping(let mapping):
            var entries: [(String, Node)] = []
            for pair in mapping {
                guard case .scalar(let key) = pair.key else { throw RephotoError.badInput("\(path): a key that is not text") }
                entries.append((key.string, try node(yaml: pair.value, path: path, depth: depth + 1, budget: &budget)))
            }
            return .map(entries)
        case .alias: throw RephotoError.badInput("\(path): a YAML alias where a value belongs: not a calibration file", cause: .notCalibrationFile)
        }
    }

    /// The 3x3 matrix under `key` (nil: the first field) of a FileStorage file's bytes.
    package static func matrix3(_ data: Data, key: String?, path: String) throws -> Matrix3 {
        guard data.count <= maxBytes, let text = String(data: data, encoding: .utf8) else {
            throw RephotoError.badInput("\(path) is not a FileStorage text file of at most 1 MiB")
        }
        try checkShape(text, path: path)
        let root = try document(text, path: path)
        var node: Node?
        if let key { node = root[key] } else if case .map(let entries) = root { node = entries.first?.1 }
        guard let node else { throw RephotoError.badInput("\(path): no matrix" + (key.map { " '\($0)'" } ?? "")) }
        let (rows, cols, values) = try matrix(node, path: path, name: key ?? "matrix")
        guard rows == 3, cols == 3 else { throw RephotoError.badInput("\(path): matrix is \(rows)x\(cols), expected 3x3") }
        return Matrix3(values)
    }

    // MARK: intrinsics from the document

    static func intrinsics(_ root: Node, path: String) throws -> CameraIntrinsics {
        guard case .map = root else { throw RephotoError.badInput("\(path) is not a map of calibration fields: not a calibration file", cause: .notCalibrationFile) }
        func first(_ names: [String]) -> Node? { names.lazy.compactMap { root[$0] }.first }
        guard let kNode = first(["camera_matrix", "Camera_Matrix", "cameraMatrix"]) else {
            throw RephotoError.badInput("calibration file \(path) has no camera_matrix")
        }
        let (kRows, kCols, k) = try matrix(kNode, path: path, name: "camera_matrix")
        guard kRows == 3, kCols == 3 else { throw RephotoError.badInput("camera_matrix in \(path) is \(kRows)x\(kCols), expected 3x3") }
        guard k[1] == 0, k[3] == 0, k[6] == 0, k[7] == 0, k[8] == 1 else {
            throw RephotoError.badInput("\(path): camera_matrix \(Matrix3(k)) is not of the form [fx 0 cx; 0 fy cy; 0 0 1]")
        }
        var distortion: [Double] = []
        if let dNode = first(["distortion_coefficients", "Distortion_Coefficients", "distCoeffs"]) {
            distortion = try matrix(dNode, path: path, name: "distortion_coefficients").values
            guard [0, 4, 5, 8, 12, 14].contains(distortion.count) else {
                throw RephotoError.badInput("distortion_coefficients in \(path) has \(distortion.count) values, expected 4, 5, 8, 12 or 14")
            }
        }
        var size: ImageSize?
        let w = first(["image_width", "image_Width"]), h = first(["image_height", "image_Height"])
        if w != nil || h != nil {
            func whole(_ node: Node?) -> Int? {
                if case .scalar(let text)? = node, let v = Int(text.trimmingCharacters(in: .whitespaces)) { return v }
                return nil
            }
            guard let width = whole(w), let height = whole(h), width > 0, height > 0 else {
                throw RephotoError.badInput("\(path): image size \(shown(w))x\(shown(h)) must be two positive whole numbers (image_width, image_height)")
            }
            size = ImageSize(width: width, height: height)
        }
        return CameraIntrinsics(fx: k[0], fy: k[4], cx: k[2], cy: k[5], distortion: distortion.allSatisfy { $0 == 0 } ? [] : distortion,
                                imageSize: size)
    }

    /// A scalar as written (a value too large for an integer included, which a parsed number would hide), cut to
    /// 40 characters, for an error message; what stands in for anything else.
    static func shown(_ node: Node?) -> String {
        switch node {
        case .scalar(let text)?:
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            return trimmed.count > 40 ? String(trimmed.prefix(40)) + "..." : trimmed
        case nil: return "(missing)"
        default: return "(not a number)"
        }
    }

    /// An OpenCV matrix node ({rows, cols, dt, data}, as !!opencv-matrix or type_id "opencv-matrix") or a plain
    /// list of numbers (one row).
    static func matrix(_ node: Node, path: String, name: String) throws -> (rows: Int, cols: Int, values: [Double]) {
        func numbers(_ node: Node?) throws -> [Double] {
            let items: [Node]
            switch node {
            case .list(let list)?: items = list
            case .scalar(let text)?: items = text.split(whereSeparator: { $0.isWhitespace }).map { .scalar(String($0)) }
            default: throw RephotoError.badInput("\(name) in \(path) has no data list")
            }
            return try items.map { item in
                guard case .scalar(let text) = item, let v = Double(text.trimmingCharacters(in: .whitespaces)) else {
                    throw RephotoError.badInput("\(name) in \(path) has a value that is not a number")
                }
                return v
            }
        }
        switch node {
        case .list:
            let values = try numbers(node)
            return (1, values.count, values)
        case .map:
            func whole(_ key: String) -> Int? {
                if case .scalar(let text)? = node[key] { return Int(text.trimmingCharacters(in: .whitespaces)) }
                return nil
            }
            guard let rows = whole("rows"), let cols = whole("cols"), (0...16).contains(rows), (0...16).contains(cols) else {
                throw RephotoError.badInput("\(name) in \(path) needs rows and cols from 0 to 16 (a calibration matrix), got \(shown(node["rows"]))x\(shown(node["cols"]))")
            }
            var dt = ""
            if case .scalar(let text)? = node["dt"] { dt = text.trimmingCharacters(in: .whitespaces) }
            // A leading channel count ("3d") is allowed; 8- and 16-bit types cut a 700 px focal length to 255.
            let type = dt.drop { $0.isNumber }
            let channels = Int(dt.prefix { $0.isNumber }) ?? 1
            if ["u", "c", "w", "s"].contains(type) {
                throw RephotoError.badInput("\(name) in \(path) is stored as \(type == "u" || type == "c" ? "8" : "16")-bit integers (dt: \(dt)), which cut values off; write dt: d")
            }
            guard ["d", "f", "i", ""].contains(type), (1...4).contains(channels) else {
                throw RephotoError.badInput("\(name) in \(path) has element type dt: '\(dt)', expected d or f")
            }
            let values = try numbers(node["data"])
            guard values.count == rows * cols * channels else {
                throw RephotoError.badInput("\(name) in \(path) is malformed: \(rows)x\(cols) needs \(rows * cols * channels) values, data has \(values.count)")
            }
            return (rows, cols * channels, values)
        case .scalar:
            throw RephotoError.badInput("\(name) in \(path) is not a matrix")
        }
    }
}

/// OpenCV's XML FileStorage (`<opencv_storage>` with one element per field) as a Node tree. A reader for just
/// what OpenCV writes (declaration, comments, elements with attributes, text, the five predefined entities),
/// with an explicit stack: no DTDs, no external or custom entities, no recursion. Foundation's XMLParser leaks
/// on every malformed file, which a long-running worker cannot afford.
private enum XMLDocument {
    static func parse(_ text: String, path: String) throws -> FileStorageReader.Node {
        let bytes = Array(text.utf8)
        var stack: [(name: String, children: [(String, FileStorageReader.Node)], text: [UInt8])] = [("", [], [])]
        var i = 0, line = 1
        func fail(_ why: String) -> RephotoError { RephotoError.badInput("\(path) is not well-formed XML (line \(line): \(why))") }
        func skip(past terminator: String) throws {
            let t = Array(terminator.utf8)
            while i + t.count <= bytes.count {
                if Array(bytes[i..<(i + t.count)]) == t { i += t.count; return }
                if bytes[i] == UInt8(ascii: "\n") { line += 1 }
                i += 1
            }
            throw fail("no closing \(terminator)")
        }
        func name() -> String {
            let start = i
            while i < bytes.count, !" \t\r\n/>=".utf8.contains(bytes[i]) { i += 1 }
            return String(decoding: bytes[start..<i], as: UTF8.self)
        }
        while i < bytes.count {
            let c = bytes[i]
            guard c == UInt8(ascii: "<") else {
                if c == UInt8(ascii: "\n") { line += 1 }
                if stack[stack.count - 1].text.count < FileStorageReader.maxBytes { stack[stack.count - 1].text.append(c) }
                i += 1
                continue
            }
            let rest = bytes[i...].prefix(9)
            if rest.starts(with: "<?".utf8) { try skip(past: "?>"); continue }
            if rest.starts(with: "<!--".utf8) { try skip(past: "-->"); continue }
            if rest.starts(with: "<!".utf8) { throw fail("declarations (<!DOCTYPE, <![CDATA[) have no place in a calibration file") }
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "/") {
                i += 1
                let closing = name()
                try skip(past: ">")
                guard stack.count > 1, stack[stack.count - 1].name == closing else { throw fail("</\(closing)> closes nothing open") }
                let element = stack.removeLast()
                let node: FileStorageReader.Node = element.children.isEmpty
                    ? .scalar(unescape(String(decoding: element.text, as: UTF8.self)).trimmingCharacters(in: .whitespacesAndNewlines))
                    : .map(element.children)
                stack[stack.count - 1].children.append((element.name, node))
                continue
            }
            let opened = name()
            guard !opened.isEmpty else { throw fail("an element without a name") }
            // Attributes (OpenCV's type_id) carry nothing the reader needs: skip to the tag's end, minding quotes.
            var quote: UInt8?
            while i < bytes.count, quote != nil || bytes[i] != UInt8(ascii: ">") {
                if let q = quote { if bytes[i] == q { quote = nil } } else if bytes[i] == UInt8(ascii: "\"") || bytes[i] == UInt8(ascii: "'") { quote = bytes[i] }
                if bytes[i] == UInt8(ascii: "\n") { line += 1 }
                i += 1
            }
            guard i < bytes.count else { throw fail("<\(opened) is never closed") }
            let empty = bytes[i - 1] == UInt8(ascii: "/")
            i += 1
            if empty {
                stack[stack.count - 1].children.append((opened, .scalar("")))
            } else {
                guard stack.count <= FileStorageReader.maxDepth else { throw RephotoError.badInput("\(path) nests more than \(FileStorageReader.maxDepth) levels deep: not a calibration file", cause: .notCalibrationFile) }
                stack.append((opened, [], []))
            }
        }
        guard stack.count == 1 else { throw fail("<\(stack[stack.count - 1].name)> is never closed") }
        guard let top = stack[0].children.first else { throw fail("no element") }
        return top.1
    }

    static func unescape(_ text: String) -> String {
        guard text.contains("&") else { return text }
        return text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
    }
}
