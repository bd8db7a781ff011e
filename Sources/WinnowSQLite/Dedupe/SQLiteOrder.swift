import Foundation
import GRDB
import WinnowCore

/// ``ValueOrder`` on GRDB's values.
public enum SQLiteOrder {
    public static func compare(_ a: DatabaseValue, _ b: DatabaseValue) -> Int { ValueOrder.compare(SQLValue(a), SQLValue(b)) }

    /// Same type and same bytes: what "unchanged" means for a journal.
    public static func identical(_ a: DatabaseValue, _ b: DatabaseValue) -> Bool { ValueOrder.identical(SQLValue(a), SQLValue(b)) }
}
