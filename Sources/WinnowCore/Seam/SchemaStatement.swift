/// One statement of winnow's own DDL (``SQLDialect/bookkeepingSchema``), with the question
/// whether it has anything to do.
///
/// Every writing run makes sure its tables are there, so the DDL runs against a database that
/// almost always has them. Some engines take a lock on the table before they find that an
/// `IF NOT EXISTS` or `IF EXISTS` clause leaves nothing to do: PostgreSQL's `CREATE INDEX IF NOT
/// EXISTS` takes a `SHARE` lock (waiting for every transaction that writes the table) and
/// `ALTER TABLE ... DROP CONSTRAINT IF EXISTS` an `ACCESS EXCLUSIVE` one (waiting for every
/// reader, `pg_dump` included). Such a statement carries ``neededIf``, a query of the catalog
/// that returns a row only where the statement would change something; elsewhere it is not sent.
public struct SchemaStatement: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByStringInterpolation {
    /// The statement.
    public var sql: String
    /// A query that returns a row where ``sql`` would change something; nil: always run.
    public var neededIf: String?

    public init(_ sql: String, neededIf: String? = nil) {
        self.sql = sql
        self.neededIf = neededIf
    }

    public init(stringLiteral value: String) { self.init(value) }

    public init(stringInterpolation: DefaultStringInterpolation) { self.init(String(stringInterpolation: stringInterpolation)) }
}
