import Foundation

/// Data for `key: {any: ...}` scenarios, shared by the SQLite and PostgreSQL suites.
package enum AnyKeyFixture {
    /// A chain A~B by e-mail (case and space differ), B~C by phone, D~E by name and birth date,
    /// F alone; G and H share only a NULL phone. Orders point at the rows.
    package static let people = """
        CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, phone TEXT, name TEXT, born TEXT, visits INTEGER);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER NOT NULL REFERENCES people(id), total INTEGER);
        CREATE INDEX orders_person ON orders (person_id);
        INSERT INTO people VALUES
            (1, 'ann@x.org', NULL, 'Ann', '1980-01-01', 1),
            (2, ' ANN@x.org', '555-0100', 'Ann B', '1980-01-02', 2),
            (3, 'ann.b@y.org', '555-0100', 'Annie', NULL, 4),
            (4, 'dan@x.org', NULL, 'Dan', '1970-05-05', 8),
            (5, 'daniel@z.org', NULL, 'Dan', '1970-05-05', 16),
            (6, 'fay@x.org', '555-0199', 'Fay', '1990-09-09', 32),
            (7, 'g@x.org', NULL, 'Gus', NULL, 64),
            (8, 'h@x.org', NULL, 'Hal', NULL, 128);
        INSERT INTO orders VALUES (10, 2, 100), (11, 3, 50), (12, 5, 7), (13, 7, 9), (14, 8, 3);
        """

    /// The three keys of a rule over ``people``: e-mail (trimmed, case-folded), phone, name and
    /// birth date (list items at 8 spaces, as under `key:` `any:` of a rule at 2).
    package static let keys = """
                - {columns: [email], normalize: [trim, lowercase]}
                - phone
                - [name, born]
        """

    /// The table of generated rows (each property test draws its own values).
    package static let generatedTable =
        "CREATE TABLE people (id INTEGER PRIMARY KEY, email TEXT, phone TEXT, name TEXT, born TEXT, created INTEGER);"

    /// A rule over generated rows: case-folded e-mail, phone, or similar names inside one birth
    /// date; earliest `created` wins; batches of `batch` groups.
    package static func generatedJob(batch: Int) -> String {
        """
        version: 1
        batch: {size: \(batch)}
        dedupe:
          - entity: people
            key:
              any:
                - {columns: [email], normalize: [trim, lowercase]}
                - phone
                - columns: [born]
                  similar: {columns: name, jaro_winkler: 0.85}
            max_group_size: 1000
            winner: [{created: asc}]
        """
    }
}
