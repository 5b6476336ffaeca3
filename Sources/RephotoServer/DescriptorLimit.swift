import Foundation

/// The process's file-descriptor limit (RLIMIT_NOFILE), which bounds the default --max-connections.
public enum DescriptorLimit {
    /// The soft limit now.
    public static var current: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return limit.rlim_cur == rlim_t.max ? 1 << 20 : Int(clamping: limit.rlim_cur)
    }

    /// Raises the soft limit to the hard one (as servers commonly do at start) and returns the soft limit then.
    @discardableResult
    public static func raise() -> Int {
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return current
    }
}
