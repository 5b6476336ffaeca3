import Foundation
import RephotoKit

/// Finds sequence folders (any folder with a sequence.json) under the given paths, in a deterministic order.
public enum SequenceDiscovery {
    /// Follows symbolic links to folders (recorded data is often linked in), visiting each real folder once,
    /// so a link loop ends and a sequence reached two ways is evaluated once. Folders nested deeper than
    /// `maxDepth` under a path are refused rather than skipped: a sequence there would go missing unnoticed.
    public static let maxDepth = 64

    public static func find(_ paths: [String]) throws -> [URL] {
        let fm = FileManager.default
        var found: [String: String] = [:]  // real path -> the path it was first reached by
        var visited = Set<String>()
        for path in paths {
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
                // A link to itself once read "no such folder", sending the user to look for a missing folder.
                var info = stat()
                let reason = stat(path, &info) == 0 ? "not a folder"
                    : errno == ENOENT ? "no such folder" : "cannot open (\(String(cString: strerror(errno))))"
                throw RephotoError.badInput("\(path): \(reason)")
            }
            var stack = [(URL(fileURLWithPath: path).standardizedFileURL, 0)]
            while let (folder, depth) = stack.popLast() {
                guard let real = realPath(folder.path), visited.insert(real).inserted else { continue }
                guard depth <= maxDepth else {
                    throw RephotoError.badInput("\(folder.path): folders nested more than \(maxDepth) deep under \(path); point at a folder further down")
                }
                if fm.fileExists(atPath: folder.appendingPathComponent("sequence.json").path), found[real] == nil {
                    found[real] = folder.path
                }
                let children = ((try? fm.contentsOfDirectory(atPath: folder.path)) ?? []).sorted(by: >)
                for name in children {
                    let child = folder.appendingPathComponent(name)
                    var childIsDirectory: ObjCBool = false
                    if fm.fileExists(atPath: child.path, isDirectory: &childIsDirectory), childIsDirectory.boolValue {
                        stack.append((child, depth + 1))
                    }
                }
            }
        }
        return found.values.sorted().map { URL(fileURLWithPath: $0) }
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Shard `index` of `count` (0-based): every count-th sequence of the sorted list, so shards are disjoint,
    /// cover everything, and do not depend on which machine runs them.
    public static func shard(_ sequences: [URL], index: Int, count: Int) -> [URL] {
        sequences.enumerated().filter { $0.offset % count == index }.map(\.element)
    }
}
