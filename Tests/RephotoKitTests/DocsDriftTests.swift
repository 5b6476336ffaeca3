import Foundation
import RephotoTestSupport
import Testing
@testable import RephotoKit

/// The reference pages name settings, types and constants in backticks; each must still exist in the code, so a
/// rename or a retired rule shows here and not in a reader's confusion (docs/pose.md once described a parallax
/// bound the registry had retired, and docs/architecture.md a `PoseVerdict` type that never existed).
@Suite struct DocsDriftTests {
    static let checkedPages = ["docs/pose.md", "docs/architecture.md"]

    /// Names from outside the package that the pages quote for their meaning: Apple's CoreMotion attitude, SwiftPM's
    /// manifest setting and OpenCV's pose recovery.
    static let external: Set<String> = ["CMAttitude", "linkerSettings", "recoverPose"]

    /// What the code declares, read from its files: Swift and C/C++ under Sources/ and CShims/, and Package.swift.
    struct Declarations {
        var types: Set<String> = []
        var members: Set<String> = []
        var constants: Set<String> = []
        var cFiles: Set<String> = []

        init() throws {
            let root = Fixtures.packageRoot
            var texts: [String] = [try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)]
            for folder in ["Sources", "CShims"] {
                guard let enumerator = FileManager.default.enumerator(at: root.appendingPathComponent(folder), includingPropertiesForKeys: nil) else {
                    throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: folder])
                }
                for case let url as URL in enumerator where ["swift", "h", "hpp", "cpp"].contains(url.pathExtension) {
                    texts.append(try String(contentsOf: url, encoding: .utf8))
                    if url.pathExtension != "swift" { cFiles.insert(url.lastPathComponent) }
                }
            }
            let text = texts.joined(separator: "\n")
            types = Self.captures(#"\b(?:struct|enum|class|protocol|typealias|actor|using)\s+([A-Za-z_][A-Za-z0-9_]*)"#, in: text)
                .union(Self.captures(#"name:\s*"([A-Za-z][A-Za-z0-9-]*)""#, in: text))  // Package.swift's targets and products
            members = Self.captures(#"\b(?:let|var|func|case)\s+([A-Za-z_][A-Za-z0-9_]*)"#, in: text)
            // The later cases of `case a, b = "b", c`.
            for list in Self.captures(#"\bcase\s+([A-Za-z][^\n:{(]*,[^\n:{(]*)"#, in: text) {
                for part in list.split(separator: ",") {
                    if let name = part.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).first { members.insert(String(name)) }
                }
            }
            constants = Self.captures(#"#define\s+(RP_[A-Z0-9_]+)"#, in: text)
        }

        static func captures(_ pattern: String, in text: String) -> Set<String> {
            let regex = try! NSRegularExpression(pattern: pattern)
            let ns = text as NSString
            return Set(regex.matches(in: text, range: NSRange(location: 0, length: ns.length)).map { ns.substring(with: $0.range(at: 1)) })
        }
    }

    /// The backticked spans of a page.
    static func spans(of page: String) throws -> [String] {
        let text = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent(page), encoding: .utf8)
        return Declarations.captures("`([^`\n]+)`", in: text).sorted()
    }

    static func isUpperCamel(_ s: Substring) -> Bool { s.first?.isUppercase == true && s.contains(where: \.isLowercase) && s.allSatisfy { $0.isLetter || $0.isNumber } }
    static func isLowerCamel(_ s: Substring) -> Bool { s.first?.isLowercase == true && s.contains(where: \.isUppercase) && s.allSatisfy { $0.isLetter || $0.isNumber } }

    /// What is wrong with one backticked span, or nil when it names nothing checkable or something that exists.
    static func problem(with span: String, _ code: Declarations) -> String? {
        let registry = Set(ParameterRegistry.parameters.map(\.path))
        if let replacement = ParameterRegistry.retired[span.split(separator: " ").first.map(String.init) ?? span] {
            return "`\(span)` is a retired setting: \(replacement)"
        }
        if span.hasPrefix("RP_") {
            return code.constants.contains(span) ? nil : "`\(span)` is no constant of rephoto_pose_constants.h or the shim"
        }
        if span.hasSuffix(".cpp") || span.hasSuffix(".hpp") || span.hasSuffix(".h") {
            return code.cFiles.contains(String(span.split(separator: "/").last ?? "")) ? nil : "`\(span)` is no file under CShims/"
        }
        // The leading name, when what follows it is nothing, a call's arguments or a value (`pose.translation: null`).
        guard let name = span.prefixMatch(of: /[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*)*/)?.output.0 else { return nil }
        let rest = span[name.endIndex...]
        guard rest.isEmpty || rest.hasPrefix("(") || rest.hasPrefix(":") || rest.hasPrefix(" =") else { return nil }
        let parts = name.split(separator: ".")
        if external.contains(String(parts[0])) { return nil }
        if isUpperCamel(parts[0]) {
            guard code.types.contains(String(parts[0])) else { return "`\(span)`: no type \(parts[0]) is declared in Sources/ or CShims/" }
            let missing = parts.dropFirst().filter { !code.members.contains(String($0)) }
            return missing.isEmpty ? nil : "`\(span)`: \(missing.joined(separator: ", ")) is declared nowhere in Sources/ or CShims/"
        }
        let sections = Set(registry.compactMap { $0.contains(".") ? $0.split(separator: ".").first.map(String.init) : nil })
        if parts.count > 1, sections.contains(String(parts[0])) {
            let path = String(name)
            if registry.contains(path) || registry.contains(where: { $0.hasPrefix(path + ".") }) { return nil }
            // Not a setting: a field of the JSON output (`pose.evidence.wellTriangulated`), whose names are the types' properties.
            let missing = parts.dropFirst().filter { !code.members.contains(String($0)) }
            return missing.isEmpty ? nil : "`\(span)` is no setting of the registry (nor a field of the output: \(missing.joined(separator: ", ")) is declared nowhere)"
        }
        if parts.count == 1, isLowerCamel(parts[0]) {
            return registry.contains(String(name)) || code.members.contains(String(name)) ? nil
                : "`\(span)` is no setting of the registry and is declared nowhere in Sources/ or CShims/"
        }
        return nil
    }

    /// docs/pose.md and docs/architecture.md name only settings, types, constants and files that exist.
    @Test(arguments: checkedPages) func thePageNamesOnlyWhatExists(page: String) throws {
        let code = try Declarations()
        let spans = try Self.spans(of: page)
        #expect(spans.count > 30, "\(page): too few backticked names found to be a check")
        for span in spans {
            if let problem = Self.problem(with: span, code) { Issue.record("\(page): \(problem)") }
        }
    }

    /// The check itself: it knows a type, a setting and a constant that exist, and refuses ones that do not.
    @Test func theCheckTellsExistingNamesFromGoneOnes() throws {
        let code = try Declarations()
        for span in ["PoseRefusal", "RelativePose.estimate", "pose.minRivalExcess",
                     "pose.referenceFocal", "pose.translation: null", "minimumInliers", "RP_RIVAL_DEGREES", "robust_loop.hpp"] {
            #expect(Self.problem(with: span, code) == nil, "\(span)")
        }
        for span in ["PoseVerdict", "RelativePose.recoverPose", "pose.minParallax", "pose.maxParallaxRatio", "RP_MIN_PARALLAX", "recover_pose.cpp"] {
            #expect(Self.problem(with: span, code) != nil, "\(span)")
        }
    }

    /// docs/decisions.md is the reference of why each default is what it is: every parameter of the registry has its
    /// entry there, by its path.
    @Test func everySettingHasItsDecision() throws {
        let decisions = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent("docs/decisions.md"), encoding: .utf8)
        let missing = ParameterRegistry.parameters.map(\.path).filter { !decisions.contains("`\($0)`") }
        #expect(missing.isEmpty, "docs/decisions.md has no entry for \(missing.joined(separator: ", "))")
    }
}
