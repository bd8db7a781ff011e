import GRDB
import GRDBSQLite
import WinnowCore

/// How much memory a rule's statements keep their work in, on SQLite.
///
/// SQLite gives each database of a connection a page cache of 2,000 KiB, and its sorter keeps
/// that much of a sort in memory before it writes a sorted run to a temporary file. On a small
/// table the queue of losers, the merge decisions and the sorts after discovery fit in a few
/// megabytes more, and with the default they are written to temporary files instead
/// (merge-500 at 200,000 rows: 337,000 blocks written with the defaults, 266,000 with the
/// caches below; docs/performance.md, "Working memory"). So on a small table both caches are
/// raised to fit, except for discovery's own sort: it spills in runs that a helper thread sorts
/// while the table is still being read, and the same sort held in memory is one thread's work at
/// the end (lower-500 took 13-19% longer with the same CPU time). On a larger table the caches
/// stay at SQLite's default, where a larger one would only write the same runs in larger pieces
/// and hold more memory.
extension DedupeExecutor {
    /// SQLite's page cache for each database of a connection (`PRAGMA cache_size = -2000`).
    static let defaultCacheKiB = 2000
    /// What one row of the table is estimated to need in the caches: its share of the queue,
    /// the decisions and the sorts over them (merge-500 at 200,000 rows wrote as little with
    /// 80 bytes a row as with 96, and 24,000 blocks more with 64).
    static let bytesPerRow = 80
    /// The largest cache a rule's table is given (each of two): tables that would need more
    /// get the default (above about 310,000 rows; merge-500 at 310,000 rows peaked at 92 MiB
    /// with it, 57 MiB without).
    static var workingMemoryLimitKiB = 24 * 1024

    /// The cache (KiB, for the main and the temporary database each) of a rule whose table has
    /// `rows` rows; nil where SQLite's default serves (a small table, or one too large to sort
    /// in memory).
    static func workingMemoryKiB(rows: Int) -> Int? {
        let wanted = rows.multipliedReportingOverflow(by: bytesPerRow).partialValue / 1024
        guard rows > 0, wanted > defaultCacheKiB, wanted <= workingMemoryLimitKiB else { return nil }
        return wanted
    }

    /// Sizes the connection's caches for this rule (each rule sets them again, so a small
    /// table's caches never carry over to a large one): the temporary database's from the
    /// start; the main database's (which also sizes the sorter's runs) only once discovery's
    /// window has run (`sorting` false). While the main cache is raised the sorter uses no
    /// helper thread: a sort that fits needs none, and one that does not (rows far wider than
    /// the estimate) then holds one run in memory at a time, not one per thread.
    ///
    /// With the raised caches the temporary database keeps its rollback journal in memory too
    /// (`PRAGMA temp.journal_mode = MEMORY`): a batch that changes its small tables wrote the
    /// pages' old contents to a journal file and truncated it at every commit (merge-archive-50:
    /// 14 MB over 1,068 commits; merge-500 and merge-archive-50 wrote 4% fewer bytes with it,
    /// peak memory unchanged). Such a journal holds at most the temporary database's pages, which
    /// the raised cache is sized to hold; on a larger table it stays a file.
    func sizeWorkingMemory(rows: Int, sorting: Bool) throws {
        let raised = Self.workingMemoryKiB(rows: rows)
        try db.execute(sql: "PRAGMA temp.cache_size = -\(raised ?? Self.defaultCacheKiB)")
        _ = try String.fetchOne(db, sql: "PRAGMA temp.journal_mode = \(raised == nil ? "DELETE" : "MEMORY")")
        let main = sorting ? nil : raised
        try db.execute(sql: "PRAGMA main.cache_size = -\(main ?? Self.defaultCacheKiB)")
        try db.execute(sql: "PRAGMA threads = \(main == nil ? DatabaseOpener.sorterThreads : 0)")
    }

    /// Whether this rule's caches are raised (``sizeWorkingMemory(rows:sorting:)``): the
    /// temporary database's cache is above SQLite's default, and its journal is kept in memory.
    func workingMemoryRaised() throws -> Bool {
        // (``sizeWorkingMemory(rows:sorting:)`` sets it in KiB: negative.)
        guard let cache = try Int.fetchOne(db, sql: "PRAGMA temp.cache_size") else { return false }
        return cache < -Self.defaultCacheKiB
    }

    /// The bytes one loser is estimated to take in `temp.winnow_mapped` (its rowid and its
    /// winner's, a row of a rowid table: merge-500 at 1,600,000 customers mapped 1,070,000
    /// losers in about 16 MB). Tests raise it to see a small table's map held.
    static var mappedBytesPerLoser = 16
    /// The largest map of losers the temporary cache is raised to hold while children are
    /// re-pointed ahead (``raiseTemporaryCacheForMap(losers:)``).
    static let mapCacheLimitKiB = 24 * 1024

    /// Raises the temporary database's page cache to hold the map of losers and their winners
    /// (`temp.winnow_mapped`) while children are re-pointed ahead, where the cache is SQLite's
    /// default and the map fits in ``mapCacheLimitKiB``; returns the cache size to restore
    /// (nil: unchanged). Each stretch looks every child row's reference up in the map, at a
    /// random place of it, and in the default cache of 2,000 KiB most look-ups read a page from
    /// the file (merge-500 at 1,600,000 customers: 2.6 s of the stretches' 6.9 s). A larger map
    /// (above about two million losers) leaves the cache as it is, so that a run's memory stays
    /// bounded whatever the table.
    func raiseTemporaryCacheForMap(losers: Int) throws -> Int? {
        guard let current = try Int.fetchOne(db, sql: "PRAGMA temp.cache_size"), current == -Self.defaultCacheKiB else { return nil }
        let wanted = losers.multipliedReportingOverflow(by: Self.mappedBytesPerLoser).partialValue / 1024 * 5 / 4
        guard wanted > Self.defaultCacheKiB, wanted <= Self.mapCacheLimitKiB else { return nil }
        try db.execute(sql: "PRAGMA temp.cache_size = -\(wanted)")
        return current
    }

    /// The number of batches from which ``flushTemporaryPages(expectedBatches:sql:)`` writes
    /// the temporary database out before them.
    static let flushTemporaryFromBatches = 256

    /// Writes the temporary database's changed pages to its file once, before a rule's
    /// deletion batches, where the batches are many.
    ///
    /// SQLite keeps a temporary database's changed pages in its cache until the cache is full,
    /// and at the end of every transaction that wrote to the temporary database it walks all
    /// of them to clear their write flags. In a raised cache (above) that is the whole queue,
    /// at every batch's commit: merge-archive-50 at 200,000 rows spent about 4% of its run
    /// there over 1,068 batches (docs/performance.md, "Working memory"). Once written the
    /// pages are clean, and each commit walks only the few pages its batch changed. The write
    /// costs about as much as a hundred such walks (about 11 MB at that size), so it is done
    /// only from ``flushTemporaryFromBatches`` batches on, and only in a raised cache: in
    /// SQLite's default one the walk is of at most 2,000 KiB of pages. Nothing of the user's
    /// database is written: the transaction writes the temporary database alone.
    func flushTemporaryPages(expectedBatches: Int, sql: BatchStatements) throws {
        guard expectedBatches >= Self.flushTemporaryFromBatches, try workingMemoryRaised() else { return }
        try db.inTransaction(.deferred) {
            // A statement that writes the temporary database opens its write transaction,
            // which the flush needs (the batch table is empty between batches).
            try db.execute(sql: sql.clearBatch)
            let code = sqlite3_db_cacheflush(db.sqliteConnection)
            guard code == SQLITE_OK else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "writing the temporary database's pages out")
            }
            return .commit
        }
    }
}
