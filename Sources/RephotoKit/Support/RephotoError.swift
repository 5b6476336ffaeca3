import Foundation

/// Every failure RephotoKit reports: a category (which decides the CLI exit code and the HTTP status)
/// and a one-line message naming the problem and the offending value.
public struct RephotoError: Error, CustomStringConvertible, Equatable, Sendable {
    public enum Kind: String, Codable, Sendable {
        /// The caller's input is wrong: unreadable or oversized image, bad calibration, bad parameter.
        case badInput = "bad_input"
        /// Input was fine but there is not enough signal: too few features, matches or inliers.
        case estimationFailed = "estimation_failed"
        /// A bug or an unexpected library failure.
        case `internal`
        /// The work was refused for lack of capacity (a full compute queue); retrying later may succeed.
        case unavailable
    }

    /// Finer causes of bad input that a service answers differently (HTTP 413 and 415).
    public enum Reason: String, Codable, Sendable {
        /// Over a byte or pixel limit, refused before decoding.
        case tooLarge = "too_large"
        /// A file format the pipeline does not decode.
        case unsupportedFormat = "unsupported_format"
    }

    /// Named failures that callers and tests tell apart without reading the message's words. Not part of the
    /// error envelope (`reason` is what services answer on); the raw value is a stable name.
    public enum Cause: String, Codable, Sendable, CaseIterable {
        /// The image file ends before its data does (a download or copy cut short).
        case truncatedImage = "truncated_image"
        /// The image's bytes break its format: a header, a checksum, a segment or what its decoder reads.
        case corruptImage = "corrupt_image"
        /// The decoder read the image but warned of damaged data, and strict decoding refuses it.
        case damagedImage = "damaged_image"
        /// A Hamming kernel asked for by name that this CPU cannot run.
        case unsupportedCPU = "unsupported_cpu"
        /// Two images' descriptors of different kinds or lengths (different detector settings).
        case descriptorMismatch = "descriptor_mismatch"
        /// OpenCV's process-wide settings asked to change after image work started.
        case openCVStarted = "opencv_started"
        /// Two attitudes in frames whose headings have different origins: no relative rotation.
        case headingOriginsDiffer = "heading_origins_differ"
        /// A file read as a calibration that is not one (not text, not a map, nested or sized past the limits).
        case notCalibrationFile = "not_calibration_file"
        /// Chessboard views of different sizes in one calibration.
        case viewSizesDiffer = "view_sizes_differ"
        /// Chessboard views whose fit leaves the intrinsics uncertain past the limit.
        case calibrationUndetermined = "calibration_undetermined"
        /// Marked points that the pose the matches give does not fit.
        case marksDoNotFit = "marks_do_not_fit"
    }

    public let kind: Kind
    public let message: String
    public let reason: Reason?
    /// Why the pose gate refused, when that is the failure (or part of it): its cause and numbers.
    public let refusal: PoseRefusal?
    /// The named failure, where one is named (`Cause`).
    public let cause: Cause?

    public init(_ kind: Kind, _ message: String, reason: Reason? = nil, refusal: PoseRefusal? = nil, cause: Cause? = nil) {
        self.kind = kind
        self.message = Self.bounded(message)
        self.reason = reason
        self.refusal = refusal
        self.cause = cause
    }

    /// The longest message kept whole. A message quotes what it refuses, and a config file's 900 KB key made a
    /// 1.8 MB "line": past this, its start and end are kept, which name the problem and the value.
    public static let maxMessageCharacters = 1_000

    package static func bounded(_ message: String) -> String {
        guard message.count > maxMessageCharacters else { return message }
        let head = message.prefix(700), tail = message.suffix(200)
        return "\(head) … (\(message.count - head.count - tail.count) characters left out) … \(tail)"
    }

    public static func badInput(_ message: String, cause: Cause? = nil) -> RephotoError { RephotoError(.badInput, message, cause: cause) }
    public static func estimationFailed(_ message: String, cause: Cause? = nil) -> RephotoError {
        RephotoError(.estimationFailed, message, cause: cause)
    }
    /// The pose gate's refusal, in words.
    public static func refused(_ refusal: PoseRefusal) -> RephotoError { RephotoError(.estimationFailed, refusal.description, refusal: refusal) }

    public var description: String { message }

    /// The command-line exit code of this kind: 2 bad input, 3 could not estimate, 1 internal (and unavailable).
    public var exitCode: Int32 {
        switch kind {
        case .badInput: 2
        case .estimationFailed: 3
        case .internal, .unavailable: 1
        }
    }

    /// Any error as a RephotoError: itself, or an internal error carrying its description.
    public static func wrapping(_ error: Error) -> RephotoError {
        error as? RephotoError ?? RephotoError(.internal, "\(error)")
    }

    /// The same error with context (a file name, a role) in front of the message.
    public func prefixed(_ context: String) -> RephotoError { RephotoError(kind, "\(context): \(message)", reason: reason, refusal: refusal, cause: cause) }
}

/// Throws a bad-input error naming the setting, its value and the allowed range.
package func require<T>(_ condition: Bool, _ name: String, _ value: T, _ allowed: String) throws {
    if !condition { throw RephotoError.badInput("\(name) = \(value) is out of range (allowed: \(allowed))") }
}

/// The operating system's reason behind a Foundation file error ("Not a directory", "Permission denied"),
/// rather than Foundation's "The operation could not be completed (NSCocoaErrorDomain error 512)".
package func fileErrorReason(_ error: Error) -> String {
    var current: NSError? = error as NSError
    while let e = current {
        if e.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(e.code))) }
        current = e.userInfo[NSUnderlyingErrorKey] as? NSError
    }
    // Foundation on Linux often keeps no POSIX error beneath its own (a write past `ulimit -f`, a full disk).
    if (error as NSError).domain == NSCocoaErrorDomain {
        switch CocoaError.Code(rawValue: (error as NSError).code) {
        case .fileNoSuchFile, .fileReadNoSuchFile: return "No such file or directory"
        case .fileReadNoPermission, .fileWriteNoPermission: return "Permission denied"
        case .fileWriteOutOfSpace: return "No space left on device"
        case .fileWriteVolumeReadOnly: return "Read-only file system"
        case .fileWriteUnknown: return "the write failed: the disk full, the file size limit reached, or the file system refusing it"
        case .fileReadUnknown: return "the read failed"
        default: break
        }
    }
    return (error as NSError).localizedFailureReason ?? error.localizedDescription
}

/// A text or settings file's bytes, refused past `limit` without being read (a hostile 3 GB frames.csv); an
/// empty file, a pipe or a device (`--config /dev/stdin`) is read in chunks up to `limit` (Foundation's
/// `Data(contentsOf:)` leaks a buffer reading an empty file). Errors name the path.
package func readSmallFile(_ path: String, limit: Int) throws -> Data {
    var directory: ObjCBool = false
    if FileManager.default.fileExists(atPath: path, isDirectory: &directory), directory.boolValue {
        throw RephotoError.badInput("\(path): is a directory")
    }
    // A regular file says its size up front; a pipe (/dev/stdin, a FIFO) or a device does not, and is read up to
    // the limit instead.
    if let attributes = try? FileManager.default.attributesOfItem(atPath: path), attributes[.type] as? FileAttributeType == .typeRegular {
        let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
        guard size <= limit else { throw RephotoError.badInput("\(path): \(size) bytes, more than the \(limit) such a file may have") }
        // A size of 0 may be an empty file or one the kernel writes as it is read (/proc): read it as a pipe.
        if size > 0 {
            do {
                return try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw RephotoError.badInput("\(path): cannot read (\(fileErrorReason(error)))")
            }
        }
    }
    // Opened without waiting: a named FIFO no process writes to blocked the open forever (probe: --config,
    // --calibration, a sequence's frames.csv). Then read blocking, so a writer still starting (`<(...)`) is
    // waited for, and a FIFO without one reads as empty.
    let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
    guard descriptor >= 0 else {
        throw RephotoError.badInput("\(path): cannot read (\(String(cString: strerror(errno))))")
    }
    _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
    let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: false)
    defer { try? handle.close() }
    var data = Data()
    do {
        while let chunk = try handle.read(upToCount: 1 << 16), !chunk.isEmpty {
            data.append(chunk)
            if data.count > limit { throw RephotoError.badInput("\(path): more than the \(limit) bytes such a file may have") }
        }
    } catch let error as RephotoError {
        throw error
    } catch {
        throw RephotoError.badInput("\(path): cannot read (\(fileErrorReason(error)))")
    }
    return data
}
