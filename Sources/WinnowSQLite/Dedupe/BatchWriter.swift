import Foundation
import WinnowCore
import GRDB

/// Applies batches. ``SQLiteBatchWriter`` writes (in one IMMEDIATE transaction per batch, with
/// the journal and the run's counters); ``DryRunWriter`` writes nothing: it is what makes `plan`
/// and `run --dry-run` the same executor as `run`.
protocol BatchWriter {
    /// Whether batches write: only then do they sleep `pause_ms` between them (to let other
    /// writers in) and check the references they touch when enforcement is off.
    var writes: Bool { get }
    /// Prepares what the rule's batches need (journal shapes), in its own committed transaction.
    func prepare(_ rule: CompiledRule, db: Database) throws
    /// Runs `body` as one unit of work: a write transaction, or a plain read for a dry run.
    func transaction<T>(_ db: Database, _ body: () throws -> T) throws -> T
    /// Applies one batch of a rule. Called inside ``transaction(_:_:)``.
    func apply(_ work: BatchWork, rule: CompiledRule, sql: BatchStatements, db: Database) throws
    /// Stores key hashes of the rows `selection` (SQL over the rule's table, with `arguments`)
    /// picks whose hash column is stale; returns the count.
    func fillHashes(rule: CompiledRule, selection: String, arguments: StatementArguments, batch: Int, db: Database) throws -> Int
    /// Notes in `winnow_given_merges` that the given losers' values of `table` are merged into
    /// every winner up to `end`; nil: into all of them, and the table's record is emptied
    /// (``DedupeExecutor/settleGivenMerges(_:state:batchNumber:totals:)``).
    func noteGivenSettled(table: String, upTo end: Int64?, db: Database) throws
    /// Records the run's running totals in the same transaction as the batch.
    func recordProgress(_ totals: Counts, db: Database) throws
}
