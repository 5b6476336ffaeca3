import RephotoShim

/// The SIMD kernels of exact brute-force Hamming matching. Every kernel returns the same matches as
/// cv::BFMatcher; `auto` runs the best this CPU has, the others exist so tests and benchmarks can run each.
public enum HammingKernel: Int32, CaseIterable, Sendable {
    case auto = 0, portable = 1, avx2 = 2, avx512 = 3

    /// The kernel this choice runs on this CPU; nil when the CPU cannot run it.
    public var resolved: HammingKernel? {
        let k = rp_hamming_kernel_resolve(rawValue)
        return k == RP_HAMMING_AUTO.rawValue ? nil : HammingKernel(rawValue: k)
    }

    /// "portable", "avx2" or "avx512-vpopcntdq" ("auto" for `auto`).
    public var name: String { self == .auto ? "auto" : String(cString: rp_hamming_kernel_name(rawValue)) }
}
