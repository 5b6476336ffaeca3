import Foundation

/// The worker's own files (openapi.yaml, the guide's page in Guide/), SwiftPM's resource bundle of this target: found
/// beside the executable (a build folder, or a container's bin), in `<prefix>/share/rephoto/` (scripts/install-cli), or
/// in the source folder it was built from. Looked up here, not through `Bundle.module`, whose accessor stops the
/// process when the bundle is gone (a binary copied elsewhere, its build folder deleted).
enum ServerResources {
    static let bundleName = "Rephoto_RephotoServer.resources"

    /// The folder holding the files; nil when no place has them.
    static let directory: URL? = locate(executable: Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments.first ?? ""),
                                        source: URL(fileURLWithPath: #filePath).deletingLastPathComponent())

    /// The first of: beside `executable` (its links resolved), `../share/rephoto/` from it, `source`; each must hold
    /// openapi.yaml.
    static func locate(executable: URL, source: URL) -> URL? {
        let bin = executable.resolvingSymlinksInPath().deletingLastPathComponent()
        let places = [bin.appendingPathComponent(bundleName),
                      bin.deletingLastPathComponent().appendingPathComponent("share/rephoto").appendingPathComponent(bundleName), source]
        return places.first { FileManager.default.fileExists(atPath: $0.appendingPathComponent("openapi.yaml").path) }
    }

    /// A file by its path inside the bundle; nil when it is not there.
    static func data(_ path: String, in directory: URL? = directory) -> Data? {
        directory.flatMap { try? Data(contentsOf: $0.appendingPathComponent(path)) }
    }
}
