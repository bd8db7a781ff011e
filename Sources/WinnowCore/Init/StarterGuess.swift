import Foundation

/// What `winnow init` guesses from a live schema, before any row is read: per table the
/// candidate keys worth counting, the winner order, and the references. Pure: the counts come
/// from ``Starter``, which asks the database.
public enum StarterGuess {
    /// A key worth counting: one column, or a natural key of several.
    public struct Candidate: Sendable, Equatable {
        public var columns: [String]
        /// Why it is a candidate, for the job's comments.
        public var reason: String
        /// Strong candidates (an e-mail, a UUID, an external id...) are proposed even when they
        /// find fewer groups than a weak one (a lookup table's name).
        public var strong: Bool
        /// Whether the normalisers `trim` and `lowercase` apply (text columns only).
        public var text: Bool
    }

    /// A column of another table that holds this table's key without a declared foreign key
    /// (Core Data's `Z`-prefixed to-one columns hold another entity's `Z_PK`).
    public struct ImpliedReference: Sendable, Equatable {
        public var table: String
        public var column: String
        public var label: String { "\(table).\(column)" }
    }

    /// Column names (lowercased, without separators) that identify a record.
    static let strongNames: Set<String> = [
        "email", "emailaddress", "mail", "uuid", "guid", "externalid", "extid", "externalkey", "externalref", "identifier",
        "username", "login", "handle", "slug", "sku", "isbn", "ean", "upc", "ssn", "socsecid", "taxid", "vat", "iban",
        "remoteid", "serverid", "cloudid", "recordid", "recordname",
    ]

    /// Column names that often identify a record but are shared too (an office's phone line).
    static let sharedNames: Set<String> = ["phone", "phonenumber", "mobile", "telephone", "tel", "fax"]

    /// Column names of a lookup table's natural key.
    static let nameNames: Set<String> = ["name", "title", "label", "code"]

    /// `created_at`, `CreatedAt`, `ZCREATIONDATE` -> `createdat`, `creationdate`: lowercased,
    /// separators dropped, and Core Data's `Z` prefix dropped when the table is a Core Data entity.
    static func canonical(_ column: String, coreData: Bool) -> String {
        var name = column.lowercased().filter { $0.isLetter || $0.isNumber }
        if coreData, name.hasPrefix("z"), name.count > 1 { name.removeFirst() }
        return name
    }

    /// Whether the table is a Core Data entity table (`Z_PK`, `Z_ENT`, `Z_OPT`).
    public static func isCoreDataEntity(_ table: LiveTable) -> Bool {
        ["Z_PK", "Z_ENT", "Z_OPT"].allSatisfy { table.column(named: $0) != nil }
    }

    /// Tables `init` leaves alone: winnow's and SQLite's own, Core Data's bookkeeping
    /// (`Z_METADATA`, `Z_PRIMARYKEY`, `Z_MODELCACHE`, `Z_<n><RELATIONSHIP>` join tables are kept),
    /// virtual tables. (``Starter`` also leaves out the tables whose rows the engine cannot name
    /// across statements: its dialect's row identity.)
    public static func isCandidateTable(_ table: LiveTable) -> Bool {
        let upper = table.name.uppercased()
        if ["Z_METADATA", "Z_PRIMARYKEY", "Z_MODELCACHE"].contains(upper) { return false }
        if Bookkeeping.isWinnowTable(table.name) || table.name.lowercased().hasPrefix("sqlite_") { return false }
        return !table.isVirtual
    }

    static func isText(_ column: LiveColumn) -> Bool {
        let type = column.type.uppercased()
        return type.isEmpty || type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT")
    }

    /// Columns already kept unique by the database (a single-column UNIQUE index or the key).
    static func uniqueColumns(_ table: LiveTable) -> Set<String> {
        var unique = Set(table.primaryKey.map { $0.lowercased() })
        for index in table.indexes where index.unique && !index.partial && index.columns.count == 1 {
            if let column = index.columns[0] { unique.insert(column.lowercased()) }
        }
        return unique
    }

    /// The keys worth counting in `table`, strongest first.
    public static func candidates(_ table: LiveTable) -> [Candidate] {
        let coreData = isCoreDataEntity(table)
        let unique = uniqueColumns(table)
        let bookkeeping: Set<String> = coreData ? ["z_pk", "z_ent", "z_opt"] : []
        let foreign = Set(table.foreignKeys.flatMap(\.childColumns).map { $0.lowercased() })
        let columns = table.storedColumns.filter {
            !unique.contains($0.name.lowercased()) && !bookkeeping.contains($0.name.lowercased())
        }
        let entity = canonical(table.name, coreData: coreData)
        var result: [Candidate] = []
        for column in columns {
            let name = canonical(column.name, coreData: coreData)
            let singular = entity.hasSuffix("s") ? String(entity.dropLast()) : entity
            if strongNames.contains(name) || name.hasSuffix("uuid") || name.hasSuffix("guid") || name.hasSuffix("email")
                || name == "\(entity)id" || name == "\(singular)id" || name == "\(entity)code" || name == "\(singular)code"
            {
                result.append(
                    Candidate(columns: [column.name], reason: "its name says it identifies a record", strong: true, text: isText(column)))
            } else if sharedNames.contains(name) {
                result.append(
                    Candidate(
                        columns: [column.name], reason: "a contact number: it identifies a record unless the number is shared",
                        strong: false, text: isText(column)))
            }
        }
        // Person names: first + last (+ birth date).
        let byName = Dictionary(columns.map { (canonical($0.name, coreData: coreData), $0) }, uniquingKeysWith: { first, _ in first })
        if let first = ["firstname", "givenname", "forename"].compactMap({ byName[$0] }).first,
            let last = ["lastname", "surname", "familyname"].compactMap({ byName[$0] }).first
        {
            var key = [first.name, last.name]
            if let birth = ["birthdate", "dateofbirth", "dob", "birthday"].compactMap({ byName[$0] }).first { key.append(birth.name) }
            result.append(Candidate(columns: key, reason: "a person's name", strong: false, text: isText(first) && isText(last)))
        }
        // A lookup table: a name or title, with the table's own foreign keys (Album: Title + ArtistId).
        let others = columns.filter { !foreign.contains($0.name.lowercased()) }
        if others.count == 1, let name = others.first, nameNames.contains(canonical(name.name, coreData: coreData)) {
            let scope = columns.filter { foreign.contains($0.name.lowercased()) }.map(\.name)
            result.append(
                Candidate(
                    columns: [name.name] + scope,
                    reason: scope.isEmpty
                        ? "the table's only column besides its key" : "the table's name column, within \(scope.joined(separator: ", "))",
                    strong: false, text: isText(name)))
        }
        return result
    }

    /// The winner order: the earliest creation time (the original record) where there is one,
    /// else the latest modification, else the most complete row.
    public static func winner(_ table: LiveTable) -> (yaml: String, reason: String) {
        let coreData = isCoreDataEntity(table)
        let names = table.storedColumns.map { ($0.name, canonical($0.name, coreData: coreData)) }
        let created = ["createdat", "created", "creationdate", "datecreated", "createdon", "insertedat", "createdtime", "creationtime"]
        let modified = ["updatedat", "updated", "modifiedat", "modified", "lastmodified", "modificationdate", "datemodified", "updatedon"]
        for wanted in created {
            if let column = names.first(where: { $0.1 == wanted })?.0 {
                return ("\n      - \(yamlName(column)): asc", "the earliest \(column) wins: the first record of the person or thing")
            }
        }
        for wanted in modified {
            if let column = names.first(where: { $0.1 == wanted })?.0 {
                return ("\n      - \(yamlName(column)): desc", "the latest \(column) wins: the most recently edited record")
            }
        }
        if coreData {
            return (
                "\n      - Z_PK: asc",
                "Core Data numbers objects in creation order, so the lowest Z_PK (the oldest object) wins"
            )
        }
        return (" most_complete", "no creation or modification time: the row with the most non-NULL columns wins")
    }

    /// Columns elsewhere that hold `table`'s key without a declared foreign key: Core Data's
    /// to-one columns (`ZBOOK.ZUSER` holds a `ZUSER.Z_PK`), named after the entity.
    public static func impliedReferences(to table: LiveTable, in schema: LiveSchema) -> [ImpliedReference] {
        guard isCoreDataEntity(table) else { return [] }
        var result: [ImpliedReference] = []
        for other in schema.tables where isCoreDataEntity(other) {
            for column in other.storedColumns where column.name.caseInsensitiveCompare(table.name) == .orderedSame {
                let declared = other.foreignKeys.contains { $0.childColumns.map { $0.lowercased() } == [column.name.lowercased()] }
                if !declared && column.type.uppercased().contains("INT") {
                    result.append(ImpliedReference(table: other.name, column: column.name))
                }
            }
        }
        return result
    }

    /// A name as YAML writes it: plain when safe, else double-quoted.
    public static func yamlName(_ name: String) -> String {
        let plain =
            !name.isEmpty && name.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || $0 == "_" }
            && !(name.first?.isNumber ?? true)
            && !["true", "false", "yes", "no", "on", "off", "null", "y", "n"].contains(name.lowercased())
        if plain { return name }
        return "\"" + name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
