import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The sample groups of a rule's summary, in the order they were decided.
///
/// The first ``heldInMemory`` are held in memory; later ones are written to a temporary file
/// as one record each (``GroupSample/appendRecord(to:)``) and read back one at a time as they
/// are listed. `plan --verbose` lists every group, and a large table has hundreds of
/// thousands of them: held in an array, merge-500's 426,473 groups at 1,600,000 customers took
/// 2.29 GB of memory (docs/performance.md, "`plan --verbose` holds a bounded number of
/// groups"). The file is
/// removed from its directory as soon as it is created (`TMPDIR`, else `/tmp`), so nothing is
/// left behind by a run that is killed; it is closed once no list or iterator refers to it.
///
/// A `SampleList` is a value: a copy that is appended to after another copy was appended to
/// writes its own file.
public struct SampleList: Sendable, Equatable, Sequence, ExpressibleByArrayLiteral {
    /// How many samples a list holds in memory before it writes the rest to a file (tests
    /// lower it to see a small list spill).
    nonisolated(unsafe) package static var heldInMemory = 1_000

    private var held: [GroupSample] = []
    private var spill: SpillFile?
    /// The samples in `spill` that belong to this list, and their bytes (a copy of the list
    /// may have appended more to the same file).
    private var spilled = 0
    private var spilledBytes = 0

    public init() {}

    /// A list of `samples`, all held in memory.
    public init(_ samples: [GroupSample]) { held = samples }

    public init(arrayLiteral elements: GroupSample...) { held = elements }

    public var count: Int { held.count + spilled }

    public var isEmpty: Bool { count == 0 }

    public var first: GroupSample? {
        var iterator = makeIterator()
        return iterator.next()
    }

    /// Appends `samples` after the others; those beyond ``heldInMemory`` go to the file.
    /// Throws ``WinnowError/io(_:)`` where the file cannot be created or written.
    public mutating func append(contentsOf samples: some Sequence<GroupSample>) throws {
        try append(contentsOf: samples, holding: Self.heldInMemory)
    }

    /// Appends `samples`, holding in memory only while fewer than `limit` are held and none
    /// has gone to the file.
    private mutating func append(contentsOf samples: some Sequence<GroupSample>, holding limit: Int) throws {
        var lines: [UInt8] = []
        var added = 0
        for sample in samples {
            if spill == nil, held.count < limit {
                held.append(sample)
                continue
            }
            SpillFile.encode(sample, to: &lines)
            added += 1
        }
        guard added > 0 else { return }
        if let file = spill, file.length != spilledBytes {
            spill = try file.copy(bytes: spilledBytes)
        } else if spill == nil {
            spill = try SpillFile()
        }
        try spill?.append(lines)
        spilled += added
        spilledBytes += lines.count
    }

    /// The list with `transform` applied to each sample.
    public func map(_ transform: (GroupSample) throws -> GroupSample) throws -> SampleList {
        var mapped = SampleList(try held.map(transform))
        guard let spill, spilled > 0 else { return mapped }
        var reader = SpillFile.Reader(file: spill, records: spilled)
        var batch: [GroupSample] = []
        while let sample = try reader.next() {
            batch.append(try transform(sample))
            if batch.count >= 1_000 {
                try mapped.append(contentsOf: batch, holding: held.count)
                batch.removeAll(keepingCapacity: true)
            }
        }
        try mapped.append(contentsOf: batch, holding: held.count)
        return mapped
    }

    /// Why the samples in the file could not all be read back, once an iterator failed to; nil
    /// while nothing failed. An iterator that fails ends there, so a list's readers show it.
    public var readFailure: String? { spill?.failure }

    /// The sample at an index, read in order: each index after the one before is the next
    /// sample; any other starts again from the first. nil past the end or where the file
    /// could not be read (``readFailure``).
    package func sequentialAccess() -> (Int) -> GroupSample? {
        final class Position {
            var iterator: Iterator
            var next = 0
            init(_ iterator: Iterator) { self.iterator = iterator }
        }
        let position = Position(makeIterator())
        return { index in
            if index < position.next {
                position.iterator = makeIterator()
                position.next = 0
            }
            while position.next < index {
                guard position.iterator.next() != nil else { return nil }
                position.next += 1
            }
            position.next += 1
            return position.iterator.next()
        }
    }

    public func makeIterator() -> Iterator {
        Iterator(held: held.makeIterator(), reader: spill.map { SpillFile.Reader(file: $0, records: spilled) })
    }

    /// The samples in order: those in memory, then those read back from the file.
    public struct Iterator: IteratorProtocol {
        var held: IndexingIterator<[GroupSample]>
        var reader: SpillFile.Reader?

        public mutating func next() -> GroupSample? {
            if let sample = held.next() { return sample }
            do {
                return try reader?.next()
            } catch {
                reader?.file.fail(error)
                reader = nil
                return nil
            }
        }
    }

    public static func == (lhs: SampleList, rhs: SampleList) -> Bool {
        lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { $0 == $1 }
    }
}

/// An unlinked temporary file of samples, each its record's length (eight bytes,
/// little-endian) and its record; appended to and read at offsets.
final class SpillFile: @unchecked Sendable {
    private let descriptor: Int32
    private let lock = NSLock()
    private var written = 0
    private var failed: String?

    init() throws {
        let directory = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((directory + "/winnow-samples-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else {
            throw WinnowError.io("cannot create a temporary file for sample groups in \(directory): \(String(cString: strerror(errno)))")
        }
        unlink(String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self))
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    var length: Int { lock.withLock { written } }

    var failure: String? { lock.withLock { failed } }

    func fail(_ error: Error) {
        lock.withLock { if failed == nil { failed = "\(error)" } }
    }

    static func encode(_ sample: GroupSample, to data: inout [UInt8]) {
        let start = data.count
        data.append(contentsOf: repeatElement(0, count: 8))
        sample.appendRecord(to: &data)
        withUnsafeBytes(of: UInt64(data.count - start - 8).littleEndian) { length in
            for (index, byte) in length.enumerated() { data[start + index] = byte }
        }
    }

    func append(_ data: some ContiguousBytes & Collection) throws {
        try lock.withLock {
            try data.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let n = pwrite(descriptor, buffer.baseAddress! + offset, buffer.count - offset, off_t(written + offset))
                    if n < 0, errno == EINTR { continue }
                    guard n > 0 else {
                        throw WinnowError.io("cannot write sample groups to a temporary file: \(String(cString: strerror(errno)))")
                    }
                    offset += n
                }
            }
            written += data.count
        }
    }

    /// A new file holding this file's first `bytes`.
    func copy(bytes: Int) throws -> SpillFile {
        let copy = try SpillFile()
        var offset = 0
        while offset < bytes {
            let chunk = try read(at: offset, count: min(1 << 20, bytes - offset))
            guard !chunk.isEmpty else { throw WinnowError.io("the temporary file of sample groups ended early") }
            try copy.append(chunk)
            offset += chunk.count
        }
        return copy
    }

    /// Up to `count` bytes from `offset` (fewer only at the end of the file).
    func read(at offset: Int, count: Int) throws -> Data {
        var data = Data(count: count)
        var got = 0
        try data.withUnsafeMutableBytes { buffer in
            while got < count {
                let n = pread(descriptor, buffer.baseAddress! + got, count - got, off_t(offset + got))
                if n < 0, errno == EINTR { continue }
                guard n >= 0 else {
                    throw WinnowError.io("cannot read sample groups back from a temporary file: \(String(cString: strerror(errno)))")
                }
                if n == 0 { break }
                got += n
            }
        }
        return data.prefix(got)
    }

    /// The first `records` samples of a file, decoded one at a time.
    struct Reader {
        let file: SpillFile
        var records: Int
        private var offset = 0
        /// Bytes read and not yet decoded: `buffer[start...]`.
        private var buffer: [UInt8] = []
        private var start = 0

        init(file: SpillFile, records: Int) {
            self.file = file
            self.records = records
        }

        mutating func next() throws -> GroupSample? {
            guard records > 0 else { return nil }
            while true {
                if buffer.count - start >= 8 {
                    let length = buffer.withUnsafeBytes { bytes in
                        Int(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: start, as: UInt64.self)))
                    }
                    if buffer.count - start - 8 >= length {
                        let sample = buffer.withUnsafeBytes { bytes in
                            GroupSample.record(UnsafeRawBufferPointer(rebasing: bytes[start + 8..<start + 8 + length]))
                        }
                        guard let sample else {
                            throw WinnowError.io("a sample group in the temporary file could not be read back")
                        }
                        start += 8 + length
                        records -= 1
                        return sample
                    }
                }
                let chunk = try file.read(at: offset, count: 1 << 16)
                guard !chunk.isEmpty else {
                    throw WinnowError.io("the temporary file of sample groups ended early (\(records) groups missing)")
                }
                offset += chunk.count
                buffer.removeFirst(start)
                start = 0
                buffer.append(contentsOf: chunk)
            }
        }
    }
}
