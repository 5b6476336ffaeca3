import CShims

/// Calls a shim entry point and turns a non-OK status into a `RephotoError`.
func shimCall(_ body: (UnsafeMutablePointer<rp_status>) -> Int32) throws {
    var status = rp_status()
    let code = body(&status)
    guard code != Int32(RP_OK.rawValue) else { return }
    let message = withUnsafeBytes(of: &status.message) { raw in
        String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
    }
    switch UInt32(bitPattern: code) {
    case RP_ERR_ESTIMATION.rawValue:
        throw RephotoError(.estimationFailed, message)
    case RP_ERR_INVALID_ARGUMENT.rawValue, RP_ERR_DECODE.rawValue, RP_ERR_TOO_LARGE.rawValue, RP_ERR_IO.rawValue:
        throw RephotoError(.badInput, message)
    default:
        throw RephotoError(.internal, message)
    }
}

/// OpenCV's own worker threads, process-wide: set it once at start-up to avoid oversubscription when the caller
/// runs frames in parallel. The shim waits for other threads to leave OpenCV first (TBB crashes otherwise).
public enum OpenCVThreads {
    public static func set(_ count: Int) throws {
        try shimCall { rp_set_num_threads(Int32(clamping: count), $0) }
    }
}
