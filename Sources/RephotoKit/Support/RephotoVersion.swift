/// This build's version, for `rephoto --version` and the worker's logs.
public enum RephotoVersion {
    /// The package's version (semantic; raised with each release).
    public static let number = "0.41.0"

    /// How it was compiled.
    public static var build: String {
        #if DEBUG
        "debug"
        #else
        "release"
        #endif
    }

    /// One line: the version, OpenCV's and the build, e.g. "rephoto 0.41.0 (OpenCV 4.6.0, release build)".
    public static var description: String { "rephoto \(number) (OpenCV \(OpenCVRuntime.version), \(build) build)" }
}
