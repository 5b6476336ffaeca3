// swift-tools-version:6.0
// Module graph and what each module is for: docs/architecture.md.
import PackageDescription

let openCVHeaders: [CXXSetting] = [.headerSearchPath("../OpenCVHeaders")]

func openCV(_ modules: [String]) -> [LinkerSetting] { modules.map { .linkedLibrary("opencv_" + $0) } }

let package = Package(
    name: "Rephoto",
    // No `platforms:`: the package is built and tested on Linux only (the shim uses glibc's random state).
    products: [
        .library(name: "RephotoKit", targets: ["RephotoKit"]),
        .library(name: "RephotoData", targets: ["RephotoData"]),
        .library(name: "RephotoSynthesis", targets: ["RephotoSynthesis"]),
        .library(name: "RephotoEvaluation", targets: ["RephotoEvaluation"]),
        .library(name: "RephotoServer", targets: ["RephotoServer"]),
        .library(name: "RephotoMedia", type: .dynamic, targets: ["RephotoShimMedia"]),
        .executable(name: "rephoto", targets: ["rephoto"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        .package(url: "https://github.com/yaslab/CSV.swift", from: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.0"),
        // Hummingbird's own dependencies, named because the worker imports them directly.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.34.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        // OpenCV is linked module by module rather than through pkg-config's opencv4 line, which names every module
        // Debian builds and made the loader open 380 libraries at start (docs/decisions.md, "Start-up").
        // CShims/OpenCVHeaders links to Debian's /usr/include/opencv4 (libopencv-dev: scripts/setup).
        // The production C API over OpenCV: images, features, matching, geometry, calibration I/O.
        // libjpeg and libpng read and write JPEGs and PNGs so their messages are kept; zlib checks PNG chunk CRCs;
        // libheif decodes HEIC (libjpeg-dev and zlib1g-dev come with libopencv-dev, libheif-dev is its own package).
        .target(name: "RephotoShim", path: "CShims/Core", publicHeadersPath: "include", cxxSettings: openCVHeaders,
                linkerSettings: openCV(["core", "imgproc", "features2d", "flann", "calib3d", "video", "objdetect"])
                    + ["jpeg", "png16", "z", "heif", "dl"].map { .linkedLibrary($0) }),
        // Tools-only C entry points: rendering, image effects, drawing, chessboards, video, the benchmark's C++ pipeline,
        // and the tests' QR decoder (QRCodeDetector, or contrib's WeChatQRCode where Debian's OpenCV lacks quirc).
        .target(name: "RephotoShimTools", dependencies: ["RephotoShim"], path: "CShims/Tools", publicHeadersPath: "include",
                cxxSettings: openCVHeaders, linkerSettings: openCV(["core", "imgproc", "features2d", "calib3d", "objdetect", "wechat_qrcode"])),
        // The media plugin, libRephotoMedia.so: OpenCV's imgcodecs (TIFF, WebP, BMP, PNM, JPEG 2000) and videoio
        // (FFmpeg), about 220 more libraries, which the shim loads only when a file needs them (codecs/media_plugin.cpp).
        .target(name: "RephotoShimMedia", path: "CShims/Media", publicHeadersPath: "include", cxxSettings: openCVHeaders,
                linkerSettings: openCV(["core", "imgcodecs", "videoio"])),
        // The core a worker links: the vision and sensor paths, their configuration and results.
        .target(name: "RephotoKit", dependencies: ["RephotoShim", .product(name: "Yams", package: "Yams")]),
        // Sequences on disk, importers, ground truth, chessboard calibration.
        .target(name: "RephotoData", dependencies: ["RephotoKit", "RephotoShimTools", .product(name: "CSV", package: "CSV.swift")]),
        // `rephoto synth`: rendered scenes and sequences with exact truth.
        .target(name: "RephotoSynthesis", dependencies: [
            "RephotoKit", "RephotoData", "RephotoShimTools", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // `rephoto evaluate`: errors against the truth, summaries, reports, overlays.
        .target(name: "RephotoEvaluation", dependencies: ["RephotoKit", "RephotoData", "RephotoShimTools", .product(name: "CSV", package: "CSV.swift"),
                                                    .product(name: "Yams", package: "Yams"), .product(name: "Crypto", package: "swift-crypto")]),
        // The retake-scoring worker (Hummingbird 2): `rephoto serve`. docs/server.md, openapi.yaml.
        .target(name: "RephotoServer", dependencies: [
            "RephotoKit",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdTLS", package: "hummingbird"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "Yams", package: "Yams"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOWebSocket", package: "swift-nio"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
        ], resources: [.copy("openapi.yaml"), .copy("Guide")]),
        .executableTarget(name: "rephoto", dependencies: [
            "RephotoKit", "RephotoData", "RephotoSynthesis", "RephotoEvaluation", "RephotoServer",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Yams", package: "Yams"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "rephoto-bench", dependencies: ["RephotoKit", "RephotoData", "RephotoSynthesis", "RephotoShimTools"]),
        // Parser fuzzing (scripts/fuzz builds it with libFuzzer); a plain build replays inputs.
        .executableTarget(name: "rephoto-fuzz", dependencies: ["RephotoKit", "RephotoData", "RephotoEvaluation"]),
        // Shared by the test targets: sample data, synthetic scenes, scratch folders removed at exit.
        .target(name: "RephotoTestSupport", dependencies: ["RephotoKit", "RephotoData", "RephotoSynthesis", "RephotoEvaluation"], path: "Tests/RephotoTestSupport"),
        // Tests may use every library (synthetic scenes, sequences, evaluation) to check their own target.
        .testTarget(name: "RephotoKitTests", dependencies: ["RephotoKit", "RephotoShim", "RephotoShimTools", "RephotoData", "RephotoSynthesis", "RephotoEvaluation", "RephotoTestSupport"]),
        .testTarget(name: "RephotoDataTests", dependencies: ["RephotoKit", "RephotoData", "RephotoSynthesis", "RephotoEvaluation", "RephotoTestSupport"]),
        .testTarget(name: "RephotoSynthesisTests", dependencies: ["RephotoKit", "RephotoData", "RephotoSynthesis", "RephotoEvaluation", "RephotoTestSupport"]),
        .testTarget(name: "RephotoEvaluationTests", dependencies: ["RephotoKit", "RephotoData", "RephotoSynthesis", "RephotoEvaluation", "RephotoTestSupport"]),
        .testTarget(name: "RephotoServerTests", dependencies: [
            "RephotoServer", "RephotoKit", "RephotoShimTools", "RephotoTestSupport",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "HummingbirdWSTesting", package: "hummingbird-websocket"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "Yams", package: "Yams"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
        ]),
        .testTarget(name: "rephotoTests", dependencies: ["rephoto", "RephotoKit", "RephotoData", "RephotoSynthesis", "RephotoEvaluation", "RephotoTestSupport"]),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)
