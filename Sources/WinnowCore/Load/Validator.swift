import Foundation

/// `winnow validate`: checks job and schema files without opening any database.
public enum Validator {
    public enum Result: Sendable {
        case job(Job, schema: SchemaModel?)
        case schema(SchemaModel)

        public var summary: String {
            switch self {
            case let .job(job, schema):
                let rules = "\(job.dedupe.count) dedupe rule\(job.dedupe.count == 1 ? "" : "s")"
                return schema.map { "job, \(rules), target schema version \($0.version)" } ?? "job, \(rules)"
            case let .schema(model):
                return "schema version \(model.version), \(model.tables.count) table\(model.tables.count == 1 ? "" : "s")"
            }
        }
    }

    /// Reads a file as a schema file when it has `tables:`, else as a job (whose target schema,
    /// if it names one, is read too).
    public static func validate(path: String) throws -> Result {
        let (reader, root, _) = try YAMLReader.load(path: path)
        if SchemaLoader.isSchema(root) {
            return .schema(try SchemaLoader.decode(root, reader: reader))
        }
        let job = try JobLoader.decode(root, reader: reader, baseDirectory: URL(fileURLWithPath: path).deletingLastPathComponent())
        return .job(job, schema: try JobRunner.target(job))
    }
}
