// swift-tools-version:6.1
import PackageDescription

// Layers (see docs/architecture.md):
//   WinnowCore   — load, model, plan, the seam (dialect + session), the run lifecycle. No database.
//   WinnowSQLite — the SQLite backend: GRDB, SQLite's C API, inspection, rebuilds, batches.
//   WinnowPostgres — the PostgreSQL backend: postgres-nio, the catalog, set-based batches.
//   WinnowBackends — picks the backend by the database's name (the only target that knows both).
//   winnow       — the command line: arguments, printing, exit codes.
// The trait PostgreSQL (on by default) builds the PostgreSQL backend into the router; a build
// without it (`--disable-default-traits`, what the SQLite quick start uses) leaves out
// postgres-nio and swift-nio, and refuses a postgresql:// database with exit 66.
let package = Package(
    name: "winnow",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "winnow", targets: ["winnow"]),
        .library(name: "WinnowCore", targets: ["WinnowCore"]),
        .library(name: "WinnowSQLite", targets: ["WinnowSQLite"]),
        .library(name: "WinnowPostgres", targets: ["WinnowPostgres"]),
    ],
    traits: [
        .trait(name: "PostgreSQL", description: "The PostgreSQL backend (postgres-nio) in the winnow executable"),
        .default(enabledTraits: ["PostgreSQL"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        .target(
            name: "WinnowCore",
            dependencies: [
                .product(name: "Yams", package: "Yams"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .target(
            name: "WinnowSQLite",
            dependencies: [
                "WinnowCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .target(
            name: "WinnowPostgres",
            dependencies: [
                "WinnowCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .target(
            name: "WinnowBackends",
            dependencies: ["WinnowCore", "WinnowSQLite", .target(name: "WinnowPostgres", condition: .when(traits: ["PostgreSQL"]))],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .executableTarget(
            name: "winnow",
            dependencies: [
                "WinnowCore",
                "WinnowBackends",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // Tests: fast unit tests of the core (no database) and of the SQLite backend; the slow
        // scenario suites (command line, crash harness, fuzz, live writers, sqldef) apart.
        // Scratch folders, files and the executable, with no database library (the core's
        // tests link only this and the core).
        .target(
            name: "WinnowTestFiles",
            path: "Tests/WinnowTestFiles",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .target(
            name: "WinnowTestSupport",
            dependencies: [
                "WinnowCore", "WinnowSQLite", "WinnowTestFiles", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Yams", package: "Yams"),
            ],
            path: "Tests/WinnowTestSupport",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "WinnowCoreTests",
            dependencies: ["WinnowCore", "WinnowTestFiles", .product(name: "Yams", package: "Yams")],
            resources: [.copy("Golden")],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "WinnowSQLiteTests",
            dependencies: ["WinnowCore", "WinnowSQLite", "WinnowTestSupport", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "WinnowPostgresTests",
            dependencies: [
                "WinnowCore", "WinnowSQLite", "WinnowPostgres", "WinnowBackends", "WinnowTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "WinnowScenarioTests",
            dependencies: [
                "WinnowCore", "WinnowSQLite", "WinnowTestSupport", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Yams", package: "Yams"),
            ],
            // Golden files, read from the sources (tests run in the repository).
            exclude: ["Golden"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
    ]
)
