// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Rephoto",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "RephotoKit", targets: ["RephotoKit"]),
        .executable(name: "rephoto", targets: ["rephoto"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        .package(url: "https://github.com/yaslab/CSV.swift", from: "2.5.0"),
    ],
    targets: [
        // OpenCV's compiler and linker flags come from pkg-config; nothing is compiled here.
        .systemLibrary(
            name: "COpenCV",
            path: "Sources/COpenCV",
            pkgConfig: "opencv4",
            providers: [.apt(["libopencv-dev"])]
        ),
        // The only C++ in the project: a plain-C API over OpenCV.
        .target(
            name: "CShims",
            dependencies: ["COpenCV"],
            path: "CShims",
            publicHeadersPath: "include"
        ),
        .target(
            name: "RephotoKit",
            dependencies: ["CShims", .product(name: "Yams", package: "Yams"), .product(name: "CSV", package: "CSV.swift")]
        ),
        .executableTarget(
            name: "rephoto",
            dependencies: [
                "RephotoKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        .executableTarget(
            name: "rephoto-bench",
            dependencies: ["RephotoKit", "CShims"]
        ),
        .testTarget(name: "RephotoKitTests", dependencies: ["RephotoKit", "CShims"]),
        .testTarget(name: "rephotoTests", dependencies: ["rephoto", "RephotoKit"]),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)
