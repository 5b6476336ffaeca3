import RephotoShim
import Synchronization

/// Calls a shim entry point and turns a non-OK status into a `RephotoError`.
package func shimCall(_ body: (UnsafeMutablePointer<rp_status>) -> Int32) throws {
    OpenCVRuntime.markWorkStarted()
    var status = rp_status()
    let code = body(&status)
    guard code != Int32(RP_OK.rawValue) else { return }
    let message = withUnsafeBytes(of: &status.message) { raw in
        String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
    }
    let cause = shimCause(status.cause)
    switch UInt32(bitPattern: code) {
    case RP_ERR_ESTIMATION.rawValue:
        throw RephotoError(.estimationFailed, message, cause: cause)
    case RP_ERR_TOO_LARGE.rawValue:
        throw RephotoError(.badInput, message, reason: .tooLarge, cause: cause)
    case RP_ERR_UNSUPPORTED.rawValue:
        throw RephotoError(.badInput, message, reason: .unsupportedFormat, cause: cause)
    case RP_ERR_INVALID_ARGUMENT.rawValue, RP_ERR_DECODE.rawValue, RP_ERR_IO.rawValue:
        throw RephotoError(.badInput, message, cause: cause)
    default:
        throw RephotoError(.internal, message, cause: cause)
    }
}

/// The shim's finer cause (`rp_cause`) as RephotoKit names it; nil for none or one this build does not know.
private func shimCause(_ raw: Int32) -> RephotoError.Cause? {
    switch UInt32(bitPattern: raw) {
    case RP_CAUSE_TRUNCATED_IMAGE.rawValue: .truncatedImage
    case RP_CAUSE_CORRUPT_IMAGE.rawValue: .corruptImage
    case RP_CAUSE_UNSUPPORTED_CPU.rawValue: .unsupportedCPU
    case RP_CAUSE_DESCRIPTOR_MISMATCH.rawValue: .descriptorMismatch
    default: nil
    }
}

/// A caller's integer as C's int, refused (not trapped or clamped) when it does not fit.
package func cInt(_ value: Int, _ name: String) throws -> Int32 {
    guard let converted = Int32(exactly: value) else {
        throw RephotoError.badInput("\(name) = \(value) does not fit a 32-bit integer")
    }
    return converted
}

/// OpenCV's process-wide settings, which a program sets once at start-up, before any image work: its worker
/// threads (changing them while OpenCV runs on another thread crashes its TBB backend) and its log level
/// (OpenCV prints warnings on stderr by default; RephotoKit reports every failure as an error instead).
public enum OpenCVRuntime {
    public enum LogLevel: Int32, Sendable {
        case silent = 0, fatal, error, warning, info, debug, verbose
    }

    /// OpenCV's version, e.g. "4.6.0".
    public static var version: String { String(cString: rp_opencv_version()) }

    private static let started = Atomic<Bool>(false)
    private static let gate = Mutex<Void>(())

    /// Applies the settings given. Refused once any OpenCV work has started in this process, so a running
    /// pipeline never sees its thread pool change; nothing waits for running work.
    public static func configure(threads: Int? = nil, logLevel: LogLevel? = nil) throws {
        try gate.withLock { _ in
            guard !started.load(ordering: .acquiring) else {
                throw RephotoError.badInput("OpenCV settings can only change at start-up, before any image work; this process has started work already",
                                            cause: .openCVStarted)
            }
            var status = rp_status()
            if let threads, rp_opencv_set_threads(try cInt(threads, "OpenCV threads"), &status) != 0 {
                throw RephotoError(.internal, "cannot set OpenCV threads to \(threads)")
            }
            if let logLevel, rp_opencv_set_log_level(logLevel.rawValue, &status) != 0 {
                throw RephotoError(.internal, "cannot set OpenCV's log level")
            }
        }
    }

    /// Loads the media plugin (OpenCV's imgcodecs and videoio: TIFF, WebP, BMP, PNM, JPEG 2000 and video) now
    /// instead of at the first file that needs it; throws, naming what is missing, when it cannot be found.
    public static func loadMediaPlugin() throws {
        try shimCall { rp_media_load($0) }
    }

    /// Whether image work has started (after which `configure` is refused).
    public static var hasStarted: Bool { started.load(ordering: .acquiring) }

    static func markWorkStarted() {
        if started.load(ordering: .acquiring) { return }
        // Through the gate, so a configure in progress finishes before any OpenCV call runs.
        gate.withLock { _ in started.store(true, ordering: .releasing) }
    }
}
