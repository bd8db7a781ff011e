import Foundation
import GRDB
import WinnowCore

/// The core's ``MergeResolver`` on GRDB's values.
extension MergeResolver {
    @_disfavoredOverload
    public static func merge(_ strategy: MergeStrategy, _ values: [DatabaseValue]) -> DatabaseValue {
        merge(strategy, values.map(SQLValue.init)).databaseValue
    }

    @_disfavoredOverload
    public static func changes(strategies: [MergeStrategy], rows: [[DatabaseValue]]) -> [(index: Int, value: DatabaseValue)] {
        changes(strategies: strategies, rows: rows.map { $0.map(SQLValue.init) }).map { ($0.index, $0.value.databaseValue) }
    }
}
