import Foundation

extension JobRunner {
    /// Refuses (exit 65, before anything is written) rules that would read a table the
    /// connection sees only part of: under row-level security a group may be missing rows, so
    /// a rule could keep the wrong winner and leave duplicates it cannot see. `--allow-row-security`
    /// is for those who mean it.
    package static func refuseRowSecurity(_ rules: [CompiledRule], options: RunOptions) throws {
        guard !options.allowRowSecurity, let rule = rules.first(where: { !$0.rowSecurityTables.isEmpty }) else { return }
        let tables = rule.rowSecurityTables.map { "'\($0)'" }.joined(separator: ", ")
        throw WinnowError.invalidFile(
            rule.rule.entity.location ?? rule.rule.location,
            """
            \(rule.rule.keyPath): \(tables) \(rule.rowSecurityTables.count == 1 ? "is" : "are") under row-level security that \
            this connection's role does not bypass: the rule would see only some rows and could keep the wrong winners; \
            connect as the table's owner or a role with BYPASSRLS, or pass --allow-row-security
            """)
    }
}
