// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "winnow",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "winnow", targets: ["winnow"]),
        .library(name: "WinnowKit", targets: ["WinnowKit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
    ],
    targets: [
        .target(
            name: "WinnowKit",
            dependencies: [
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .executableTarget(
            name: "winnow",
            dependencies: [
                "WinnowKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "WinnowKitTests",
            dependencies: ["WinnowKit", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Yams", package: "Yams")],
            resources: [.copy("Golden")],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
    ]
)
