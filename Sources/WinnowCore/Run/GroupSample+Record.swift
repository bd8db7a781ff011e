import Foundation

/// A sample as one record of ``SampleList``'s file: each string as its UTF-8 length (four
/// bytes, little-endian) and bytes, each list as its length and elements, in the order of the
/// struct's properties. Writing and reading 42,647 groups took about 0.14 s where
/// `JSONEncoder` and `JSONDecoder` took about 4.2 s (docs/performance.md, "`plan --verbose`
/// holds a bounded number of groups"). A property added to ``GroupSample`` is added here too;
/// `SampleListTests` fills every one.
extension GroupSample {
    /// The record's bytes, appended to `data`.
    func appendRecord(to data: inout [UInt8]) {
        var out = RecordWriter(data: data)
        data = []
        out.strings(key)
        out.rowKey(winner)
        out.list(losers) { $0.rowKey($1) }
        out.strings(columns)
        out.list(rows) { out, row in
            out.rowKey(row.row)
            out.strings(row.values)
        }
        out.list(merged) { out, value in
            out.string(value.column)
            out.string(value.before)
            out.string(value.after)
            out.flag(value.from != nil)
            if let from = value.from { out.rowKey(from) }
        }
        out.list(children) { out, child in
            out.string(child.reference)
            out.rowKey(child.loser)
            out.count(child.rows)
            out.flag(child.mayCollide)
        }
        out.list(linkedBy) { out, link in
            out.rowKey(link.row)
            out.string(link.key)
            out.rowKey(link.to)
        }
        data = out.data
    }

    /// The sample a record holds; nil where the bytes end early or are not such a record.
    static func record(_ bytes: UnsafeRawBufferPointer) -> GroupSample? {
        var input = RecordReader(bytes: bytes)
        guard let key = input.strings(), let winner = input.rowKey(), let losers = input.list({ $0.rowKey() }) else { return nil }
        var sample = GroupSample(key: key, winner: winner, losers: losers)
        guard let columns = input.strings(),
            let rows = input.list({ input -> SampleRow? in
                guard let row = input.rowKey(), let values = input.strings() else { return nil }
                return SampleRow(row: row, values: values)
            }),
            let merged = input.list({ input -> MergedValue? in
                guard let column = input.string(), let before = input.string(), let after = input.string(),
                    let hasSource = input.flag()
                else { return nil }
                var from: RowKey?
                if hasSource {
                    guard let source = input.rowKey() else { return nil }
                    from = source
                }
                return MergedValue(column: column, before: before, after: after, from: from)
            }),
            let children = input.list({ input -> Children? in
                guard let reference = input.string(), let loser = input.rowKey(), let rows = input.count(),
                    let mayCollide = input.flag()
                else { return nil }
                return Children(reference: reference, loser: loser, rows: rows, mayCollide: mayCollide)
            }),
            let linkedBy = input.list({ input -> Link? in
                guard let row = input.rowKey(), let key = input.string(), let to = input.rowKey() else { return nil }
                return Link(row: row, key: key, to: to)
            }),
            input.atEnd
        else { return nil }
        sample.columns = columns
        sample.rows = rows
        sample.merged = merged
        sample.children = children
        sample.linkedBy = linkedBy
        return sample
    }
}

private struct RecordWriter {
    var data: [UInt8]

    mutating func count(_ n: Int) {
        withUnsafeBytes(of: UInt64(truncatingIfNeeded: n).littleEndian) { data.append(contentsOf: $0) }
    }

    mutating func flag(_ value: Bool) { data.append(value ? 1 : 0) }

    mutating func string(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            count(bytes.count)
            data.append(contentsOf: bytes)
        }
    }

    mutating func strings(_ texts: [String]) { list(texts) { $0.string($1) } }

    mutating func rowKey(_ key: RowKey) {
        string(key.stored)
        list(key.parts) { out, part in
            out.string(part.column)
            out.string(part.literal)
        }
    }

    mutating func list<T>(_ items: [T], _ each: (inout RecordWriter, T) -> Void) {
        count(items.count)
        for item in items { each(&self, item) }
    }
}

private struct RecordReader {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    var atEnd: Bool { offset == bytes.count }

    mutating func count() -> Int? {
        guard bytes.count - offset >= 8 else { return nil }
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + 8])) }
        offset += 8
        let n = UInt64(littleEndian: value)
        return n <= UInt64(Int.max) ? Int(n) : nil
    }

    mutating func flag() -> Bool? {
        guard offset < bytes.count, bytes[offset] <= 1 else { return nil }
        offset += 1
        return bytes[offset - 1] == 1
    }

    mutating func string() -> String? {
        guard let length = count(), length <= bytes.count - offset else { return nil }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length]), as: UTF8.self)
        offset += length
        return text
    }

    mutating func strings() -> [String]? { list { $0.string() } }

    mutating func rowKey() -> RowKey? {
        guard let stored = string(),
            let parts = list({ input -> RowKey.Part? in
                guard let column = input.string(), let literal = input.string() else { return nil }
                return RowKey.Part(column: column, literal: literal)
            })
        else { return nil }
        return RowKey(stored: stored, parts: parts)
    }

    /// A list's elements; nil where its length cannot be right (more elements than bytes left).
    mutating func list<T>(_ each: (inout RecordReader) -> T?) -> [T]? {
        guard let n = count(), n <= bytes.count - offset else { return nil }
        var items: [T] = []
        items.reserveCapacity(n)
        for _ in 0..<n {
            guard let item = each(&self) else { return nil }
            items.append(item)
        }
        return items
    }
}
