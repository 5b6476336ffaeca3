import Foundation
import RephotoKit

/// Finds sequence folders (any folder with a sequence.json) under the given paths, in a deterministic order.
public enum SequenceDiscovery {
    public static func find(_ paths: [String]) throws -> [URL] {
        var found = Set<String>()
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw RephotoError.badInput("\(path): no such folder")
            }
            let root = URL(fileURLWithPath: path).standardizedFileURL
            if FileManager.default.fileExists(atPath: root.appendingPathComponent("sequence.json").path) { found.insert(root.path) }
            let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
            while let url = walker?.nextObject() as? URL {
                if url.lastPathComponent == "sequence.json" { found.insert(url.deletingLastPathComponent().standardizedFileURL.path) }
            }
        }
        return found.sorted().map { URL(fileURLWithPath: $0) }
    }

    /// Shard `index` of `count` (0-based): every count-th sequence of the sorted list, so shards are disjoint,
    /// cover everything, and do not depend on which machine runs them.
    public static func shard(_ sequences: [URL], index: Int, count: Int) -> [URL] {
        sequences.enumerated().filter { $0.offset % count == index }.map(\.element)
    }
}
