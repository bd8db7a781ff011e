import Foundation

extension ScenarioKit {
    /// The SQL of a `customers` table whose e-mail keys are drawn at random from a third as
    /// many values as rows (groups of varying size scattered over the table, each row a case
    /// variant), `created_at` drawn from `createdAt` (ties where it is narrow), `visits` from
    /// 0..<9, NULLs in a third of `phone`; and `orders` rows (indexed, no unique key) pointing
    /// at customers all over the table. `alsoCreate` is created between the
    /// tables and their rows. The same `seed` gives the same rows.
    package static func scatteredCustomersSQL(
        customers: Int, orders: Int, seed: UInt64, createdAt: Range<Int>, alsoCreate: String = ""
    ) -> String {
        var rng = SplitMix64(seed: seed)
        var rows: [String] = []
        for id in 1...customers {
            let key = Int.random(in: 0..<(customers / 3), using: &rng)
            let email = (Bool.random(using: &rng) ? "U" : "u") + "\(key)@x.org"
            let phone = Int.random(in: 0..<3, using: &rng) == 0 ? "NULL" : "'p\(Int.random(in: 0..<50, using: &rng))'"
            rows.append("(\(id), '\(email)', \(Int.random(in: createdAt, using: &rng)), \(Int.random(in: 0..<9, using: &rng)), \(phone))")
        }
        return """
            CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT, created_at INTEGER NOT NULL, visits INTEGER NOT NULL, phone TEXT);
            CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), amount INTEGER);
            CREATE INDEX orders_customer ON orders (customer_id);
            \(alsoCreate)
            INSERT INTO customers VALUES \(rows.joined(separator: ", "));
            WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < \(orders) - 1)
            INSERT INTO orders (customer_id, amount) SELECT 1 + (i * 48271) % \(customers), i FROM s WHERE \(orders > 0 ? 1 : 0);
            """
    }

    /// The job that deduplicates a `customers` table (as ``scatteredCustomersSQL(customers:orders:seed:createdAt:alsoCreate:)``
    /// makes one) by lower-cased e-mail, the earliest `created_at` winning, with `merge` (none
    /// where nil) and `archive` (true unless given), in batches of `size` groups (and `max_transaction_ms`
    /// where given), on `database` where given (else the caller names the file).
    package static func customersJob(
        size: Int, merge: String? = "{visits: sum, phone: fill_null}", maxTransactionMilliseconds: Int? = nil,
        database: String? = nil, archive: Bool = true
    )
        -> String
    {
        """
        version: 1\(database.map { "\ndatabase: \($0)" } ?? "")
        dedupe:
          - entity: customers
            key: email
            normalize: [lowercase]
            winner:
              - created_at: asc\(merge.map { "\n    merge: \($0)" } ?? "")
            archive: \(archive)
        batch:
          size: \(size)\(maxTransactionMilliseconds.map { "\n  max_transaction_ms: \($0)" } ?? "")
        """
    }
}
