import Crypto
import Foundation
import WinnowCore
import GRDB
import GRDBSQLite

/// The SQL functions winnow registers on every connection it opens.
///
/// They are written against SQLite's C API (no per-call Swift arrays of values) because they run
/// once per row on the hot path of grouping and journaling:
/// - `winnow_trim(x)`, `winnow_lower(x)`, `winnow_collapse_ws(x)`, `winnow_nfkc(x)`,
///   `winnow_digits(x)`: the key normalisers. TEXT is transformed; other values pass unchanged.
/// - `winnow_hash(nulls_equal, v1, ..., vn)`: lowercase hex SHA-256 of the ``ValueCodec``
///   encoding of the tuple; NULL when a part is NULL and `nulls_equal` is 0.
/// - `winnow_pack(v1, ..., vn)`: the ``ValueCodec`` encoding of the tuple, as a BLOB.
/// - `winnow_bucket(v1, ..., vn)`: a non-negative integer hash (FNV-1a) of the tuple, equal for
///   tuples SQLite's GROUP BY puts together byte for byte (1 and 1.0 alike): rows sampled by it
///   bring every row of their key with them (``DedupeExecutor/duplicateShareSQL(from:)``).
enum SQLFunctions {
    static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// SQL function name of each normaliser.
    static func name(of normalizer: Normalizer) -> String { normalizer.sqlFunction }

    static func register(on db: Database) throws {
        guard let connection = db.sqliteConnection else { return }
        let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC
        func add(
            _ name: String, _ arity: Int32,
            _ body: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void
        ) throws {
            let code = sqlite3_create_function_v2(connection, name, arity, flags, nil, body, nil, nil, nil)
            guard code == SQLITE_OK else { throw WinnowError.internal("cannot register SQL function \(name) (\(code))") }
        }
        try add("winnow_trim", 1) { ctx, _, argv in SQLFunctions.textFunction(ctx, argv, ASCII.trim, Normalize.trim) }
        try add("winnow_lower", 1) { ctx, _, argv in SQLFunctions.textFunction(ctx, argv, ASCII.lowercase, Normalize.lowercase) }
        try add("winnow_collapse_ws", 1) { ctx, _, argv in
            SQLFunctions.textFunction(ctx, argv, ASCII.collapseWhitespace, Normalize.collapseWhitespace)
        }
        try add("winnow_nfkc", 1) { ctx, _, argv in SQLFunctions.textFunction(ctx, argv, ASCII.unchanged, Normalize.nfkc) }
        try add("winnow_digits", 1) { ctx, _, argv in SQLFunctions.textFunction(ctx, argv, ASCII.digitsOnly, Normalize.digitsOnly) }
        try add("winnow_hash", -1) { ctx, argc, argv in SQLFunctions.hashFunction(ctx, argc, argv) }
        try add("winnow_pack", -1) { ctx, argc, argv in SQLFunctions.packFunction(ctx, argc, argv) }
        try add("winnow_pack_after", -1) { ctx, argc, argv in SQLFunctions.packAfterFunction(ctx, argc, argv) }
        try add("winnow_bucket", -1) { ctx, argc, argv in SQLFunctions.bucketFunction(ctx, argc, argv) }
    }

    /// FNV-1a over each value's type and bytes, without copying them.
    static func bucketFunction(_ ctx: OpaquePointer?, _ argc: Int32, _ argv: UnsafeMutablePointer<OpaquePointer?>?) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        func mixInteger(_ value: Int64) {
            var bits = UInt64(bitPattern: value)
            for _ in 0..<8 {
                mix(UInt8(truncatingIfNeeded: bits))
                bits >>= 8
            }
        }
        for i in 0..<Int(argc) {
            let value = argv?[i]
            let type = sqlite3_value_type(value)
            switch type {
            case SQLITE_INTEGER:
                mix(1)
                mixInteger(sqlite3_value_int64(value))
            case SQLITE_FLOAT:
                let real = sqlite3_value_double(value)
                if real == real.rounded(), real >= -9_223_372_036_854_775_808.0, real < 9_223_372_036_854_775_808.0 {
                    mix(1)
                    mixInteger(Int64(real))
                } else {
                    mix(2)
                    mixInteger(Int64(bitPattern: real.bitPattern))
                }
            case SQLITE_TEXT, SQLITE_BLOB:
                mix(type == SQLITE_TEXT ? 3 : 4)
                let count = Int(sqlite3_value_bytes(value))
                if count > 0, let pointer = type == SQLITE_TEXT ? UnsafeRawPointer(sqlite3_value_text(value)) : sqlite3_value_blob(value) {
                    for byte in UnsafeRawBufferPointer(start: pointer, count: count) { mix(byte) }
                }
            default:
                mix(5)
            }
        }
        sqlite3_result_int64(ctx, Int64(bitPattern: hash >> 1))
    }

    static func textFunction(
        _ ctx: OpaquePointer?, _ argv: UnsafeMutablePointer<OpaquePointer?>?,
        _ ascii: (UnsafeBufferPointer<UInt8>) -> ASCII.Result, _ transform: (String) -> String
    ) {
        guard let value = argv?[0] else { return sqlite3_result_null(ctx) }
        guard sqlite3_value_type(value) == SQLITE_TEXT, let text = sqlite3_value_text(value) else {
            return sqlite3_result_value(ctx, value)
        }
        let count = Int(sqlite3_value_bytes(value))
        let bytes = UnsafeBufferPointer(start: text, count: count)
        // Pure ASCII (most keys): work on the bytes, no String is made.
        if !bytes.contains(where: { $0 >= 0x80 }) {
            switch ascii(bytes) {
            case .unchanged:
                return sqlite3_result_value(ctx, value)
            case let .slice(range):
                return sqlite3_result_text(
                    ctx, UnsafeRawPointer(text + range.lowerBound).assumingMemoryBound(to: CChar.self),
                    Int32(range.count), transient)
            case let .bytes(output):
                return output.withUnsafeBufferPointer { buffer in
                    sqlite3_result_text(
                        ctx, UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self),
                        Int32(buffer.count), transient)
                }
            }
        }
        let input = String(decoding: bytes, as: UTF8.self)
        let output = transform(input)
        let length = Int32(output.utf8.count)
        output.withCString { sqlite3_result_text(ctx, $0, length, transient) }
    }

    /// Appends the ``KeyHash`` encoding of one SQLite value. For a key (`canonical`), a REAL
    /// that equals an integer is encoded as that integer, because SQLite's GROUP BY puts 1 and
    /// 1.0 in one group and the hash must group the same way.
    private static func append(_ value: OpaquePointer?, to bytes: inout [UInt8], canonical: Bool = false) {
        if canonical, sqlite3_value_type(value) == SQLITE_FLOAT, let whole = KeyHash.wholeInteger(sqlite3_value_double(value)) {
            bytes.append(KeyHash.Tag.integer.rawValue)
            KeyHash.appendInteger(whole, to: &bytes)
            return
        }
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER:
            bytes.append(ValueCodec.Tag.integer.rawValue)
            ValueCodec.appendInteger(sqlite3_value_int64(value), to: &bytes)
        case SQLITE_FLOAT:
            bytes.append(ValueCodec.Tag.real.rawValue)
            ValueCodec.appendInteger(Int64(bitPattern: sqlite3_value_double(value).bitPattern), to: &bytes)
        case SQLITE_TEXT:
            bytes.append(ValueCodec.Tag.text.rawValue)
            let pointer = sqlite3_value_text(value)
            let count = Int(sqlite3_value_bytes(value))
            ValueCodec.appendVarint(count, to: &bytes)
            if let pointer { bytes.append(contentsOf: UnsafeBufferPointer(start: pointer, count: count)) }
        case SQLITE_BLOB:
            bytes.append(ValueCodec.Tag.blob.rawValue)
            let count = Int(sqlite3_value_bytes(value))
            ValueCodec.appendVarint(count, to: &bytes)
            if count > 0, let pointer = sqlite3_value_blob(value) {
                bytes.append(contentsOf: UnsafeRawBufferPointer(start: pointer, count: count))
            }
        default:
            bytes.append(ValueCodec.Tag.null.rawValue)
        }
    }

    static func packFunction(_ ctx: OpaquePointer?, _ argc: Int32, _ argv: UnsafeMutablePointer<OpaquePointer?>?) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        for i in 0..<Int(argc) { append(argv?[i], to: &bytes) }
        bytes.withUnsafeBytes { buffer in
            sqlite3_result_blob(ctx, buffer.baseAddress, Int32(buffer.count), transient)
        }
    }

    /// `winnow_pack_after(image, v1, ..., vn)`: `image`'s bytes followed by the encoding of
    /// `v1, ..., vn`, which is `winnow_pack` of the values of `image` and then of these (the
    /// encoding is self-delimiting).
    static func packAfterFunction(_ ctx: OpaquePointer?, _ argc: Int32, _ argv: UnsafeMutablePointer<OpaquePointer?>?) {
        guard argc >= 1, let argv else { return sqlite3_result_error(ctx, "winnow_pack_after(image, value, ...) needs an image", -1) }
        var bytes: [UInt8] = []
        let count = Int(sqlite3_value_bytes(argv[0]))
        if count > 0, let pointer = sqlite3_value_blob(argv[0]) {
            bytes.append(contentsOf: UnsafeRawBufferPointer(start: pointer, count: count))
        }
        for i in 1..<Int(argc) { append(argv[i], to: &bytes) }
        bytes.withUnsafeBytes { buffer in
            sqlite3_result_blob(ctx, buffer.baseAddress, Int32(buffer.count), transient)
        }
    }

    /// The most values one call of `winnow_pack` is given: SQLite as built by default takes at
    /// most 127 arguments per function call (`SQLITE_MAX_FUNCTION_ARG`).
    static let packArguments = 100

    /// SQL that packs `expressions` as one `winnow_pack` of them all would: one call for up to
    /// ``packArguments``, else a first call continued by `winnow_pack_after` calls (a table of
    /// more than 127 columns).
    static func pack(_ expressions: [String]) -> String {
        var sql = "winnow_pack(\(expressions.prefix(packArguments).joined(separator: ", ")))"
        var next = packArguments
        while next < expressions.count {
            let end = min(next + packArguments - 1, expressions.count)
            sql = "winnow_pack_after(\(sql), \(expressions[next..<end].joined(separator: ", ")))"
            next = end
        }
        return sql
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    static func hashFunction(_ ctx: OpaquePointer?, _ argc: Int32, _ argv: UnsafeMutablePointer<OpaquePointer?>?) {
        guard argc >= 2, let argv else {
            return sqlite3_result_error(ctx, "winnow_hash(nulls_equal, value, ...) needs at least one value", -1)
        }
        let nullsEqual = sqlite3_value_int(argv[0]) != 0
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        for i in 1..<Int(argc) {
            if !nullsEqual, sqlite3_value_type(argv[i]) == SQLITE_NULL { return sqlite3_result_null(ctx) }
            append(argv[i], to: &bytes, canonical: true)
        }
        let digest = SHA256.hash(data: bytes)
        var hex = [UInt8](repeating: 0, count: 64)
        var k = 0
        for byte in digest {
            hex[k] = hexDigits[Int(byte >> 4)]
            hex[k + 1] = hexDigits[Int(byte & 0x0F)]
            k += 2
        }
        hex.withUnsafeBytes { buffer in
            sqlite3_result_text(ctx, buffer.baseAddress?.assumingMemoryBound(to: CChar.self), 64, transient)
        }
    }
}
