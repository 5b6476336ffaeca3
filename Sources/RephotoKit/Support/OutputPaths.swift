import Foundation

/// Outputs must never land on inputs: a results folder on a sequence rewrote its frames.csv, an import into
/// its own source replaced the photos by links to themselves, an aligned image written over its reference
/// destroyed it. Paths are compared canonically: symlinks resolved, and an output that
/// does not exist yet through its deepest existing ancestor.
package enum OutputPaths {
    /// The canonical form of `path`, existing or not.
    package static func canonical(_ path: String) -> String {
        var url = URL(fileURLWithPath: path).standardizedFileURL
        var rest: [String] = []
        while !FileManager.default.fileExists(atPath: url.path), url.path != "/" {
            rest.insert(url.lastPathComponent, at: 0)
            url.deleteLastPathComponent()
        }
        let base = url.resolvingSymlinksInPath().path
        return rest.reduce(base) { ($0 as NSString).appendingPathComponent($1) }
    }

    static func inside(_ path: String, _ folder: String) -> Bool {
        path == folder || path.hasPrefix(folder.hasSuffix("/") ? folder : folder + "/")
    }

    /// Device and inode of an existing file, symlinks followed: a hard link is the same file under another name
    /// (probe: `--out` on a hard link to an input photo replaced the photo with the calibration).
    static func identity(_ path: String) -> [Int]? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: canonical(path)),
              let device = (attributes[.systemNumber] as? NSNumber)?.intValue,
              let inode = (attributes[.systemFileNumber] as? NSNumber)?.intValue else { return nil }
        return [device, inode]
    }

    /// Refuses an output file that is one of the input files, under its name or any other.
    package static func checkFile(_ output: String, apartFrom inputs: [String], option: String = "--out") throws {
        let out = canonical(output), same = identity(output)
        if let input = inputs.first(where: { canonical($0) == out || (same != nil && identity($0) == same) }) {
            throw RephotoError.badInput("\(option) \(output) is the input \(input): it would be overwritten; write elsewhere")
        }
        try checkWritable(output, option: option)
    }

    /// An output that cannot be written is reported before the work, not after it (probe: `calibrate` searched
    /// every photo for minutes, then failed on an `--out` in a read-only folder).
    static func checkWritable(_ output: String, option: String) throws {
        var info = stat()
        let target: String
        if stat(output, &info) == 0 {
            if (info.st_mode & S_IFMT) == S_IFDIR { throw RephotoError.badInput("\(option) \(output): cannot write (a folder is in the way)") }
            // A FIFO blocks the write until a reader comes; /dev/full takes nothing (probe: both, via a link).
            guard (info.st_mode & S_IFMT) == S_IFREG else { throw RephotoError.badInput("\(option) \(output): cannot write (not a regular file)") }
            target = output
        } else {
            let parent = URL(fileURLWithPath: output).deletingLastPathComponent().path
            guard stat(parent, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
                throw RephotoError.badInput("\(option) \(output): cannot write (no folder \(parent))")
            }
            target = parent
        }
        guard access(target, W_OK) == 0 else {
            throw RephotoError.badInput("\(option) \(output): cannot write (\(String(cString: strerror(errno))))")
        }
    }

    /// A new sequence goes into a new or empty folder (hidden files aside, which no writer names): written into
    /// another sequence it replaced that one's frames.csv and left its frames behind as strays, and written into
    /// a folder of sequences it made their parent a sequence.
    package static func checkEmptyFolder(_ output: String, option: String = "--out") throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: output, isDirectory: &isDirectory) else {
            // A link to nothing is no new folder: the write failed halfway, after the other outputs.
            if (try? FileManager.default.destinationOfSymbolicLink(atPath: output)) != nil {
                throw RephotoError.badInput("\(option) \(output) is a symbolic link to nothing: name a new or empty folder")
            }
            return
        }
        guard isDirectory.boolValue else { throw RephotoError.badInput("\(option) \(output) is a file: name a new or empty folder") }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: output)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
        if !names.isEmpty {
            throw RephotoError.badInput("\(option) \(output) is not empty (\(names.prefix(3).joined(separator: ", "))\(names.count > 3 ? ", ..." : "")): name a new or empty folder")
        }
    }

    /// Refuses an output folder that is an input folder; with `disjoint`, also one inside an input folder or
    /// holding one (an import's links would replace the files they point to).
    package static func checkFolder(_ output: String, apartFrom inputs: [String], disjoint: Bool = false, option: String = "--out") throws {
        // An empty path is the current folder to the file system: its files were overwritten.
        guard !output.isEmpty else { throw RephotoError.badInput("\(option) is empty: name a folder") }
        let out = canonical(output)
        for input in inputs {
            let folder = canonical(input)
            if out == folder || (disjoint && (inside(out, folder) || inside(folder, out))) {
                throw RephotoError.badInput("\(option) \(output) \(out == folder ? "is" : "overlaps") the input folder \(input): its files would be overwritten; write elsewhere")
            }
        }
    }
}
