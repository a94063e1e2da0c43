import ChordStoreRecords
import ChordStoreDomain
import Foundation
import Synchronization

/// Periodic snapshots of the projected state, one file each in `DIR/snapshots/`, so that
/// a read as of an old point of the log replays at most one interval of events instead
/// of the whole log (see ``TimeTravel``).
///
/// A snapshot is derived data: a missing, partial or damaged file is ignored (reads fall
/// back to an earlier snapshot or to the start of the log), and deleting the folder is
/// always safe. Files are written by a background thread from a read snapshot (LMDB's,
/// or the live state's, which costs the writer a copy of what it changes next), to a
/// temporary name, fsynced, then renamed.
///
/// Layout: the magic `CSSNAP01`, then blocks of `[length: UInt32 LE][hash: UInt64 LE]
/// [bytes]`, each hash XXH64 of the block chained to the previous block's hash, and an
/// empty block at the end. The blocks' bytes are protobuf fields: 1 the sequence number,
/// 2 the controls chord, 3 each chordset in user order (its index may be absent: the
/// reader takes it from the chordset's place in the file), 4 the checksum
/// of the log record at the sequence number (a snapshot of another log is not used).
final class SnapshotFiles: Sendable {
    static let magic = Array("CSSNAP01".utf8)
    private static let blockSize = 1 << 20

    let directory: URL
    /// Events between snapshots, at least; more when the state is large (a snapshot is
    /// taken after as many events as there are chordsets, so that the disk they take
    /// stays proportional to the log). `nil`: only ``write(_:)`` takes them.
    let interval: UInt64?
    private struct State {
        var taken: [UInt64]
        var busy = false
        var chordsets = 0
        /// The head of the last attempt, kept so that a failing disk is retried one
        /// interval later, not after every commit.
        var attempted: UInt64 = 0
    }
    private let state: Mutex<State>

    init(directory: URL, interval: UInt64?) {
        self.directory = directory
        self.interval = interval.map { max(1, $0) }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names where name.hasSuffix(".tmp") {  // left by a crash mid-write
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
        state = Mutex(State(taken: names.compactMap(Self.sequence(ofFile:)).sorted()))
    }

    /// The sequence numbers of the snapshots on disk, oldest first.
    var sequences: [UInt64] { state.withLock { $0.taken } }

    /// Deletes the snapshots taken after `sequence` (their log was truncated).
    func discard(after sequence: UInt64) {
        let doomed = state.withLock { state -> [UInt64] in
            let doomed = state.taken.filter { $0 > sequence }
            state.taken.removeAll { $0 > sequence }
            state.attempted = min(state.attempted, sequence)
            return doomed
        }
        for file in doomed { try? FileManager.default.removeItem(at: directory.appendingPathComponent(Self.fileName(file))) }
    }

    /// Starts a snapshot of store `default` in the background if it has grown by an
    /// interval since the last one (`head`: its last event) and none is being written.
    func maybeTake(head: UInt64, backend: any StorageBackend) {
        guard let interval else { return }
        let start = state.withLock { state -> Bool in
            let last = max(state.taken.last ?? 0, state.attempted)
            guard !state.busy, head >= last + max(interval, UInt64(state.chordsets)) else { return false }
            state.busy = true
            state.attempted = head
            return true
        }
        guard start else { return }
        Thread.detachNewThread { [self] in
            GroupCommitWriter.nameThisThread("cs-snapshot")  // started by the writer, whose name it would show
            let written = try? backend.withSnapshot(store: StoreName.default) { snapshot in try self.write(snapshot) }
            state.withLock { state in
                state.busy = false
                if let written { state.chordsets = written.chordsets }
            }
        }
    }

    /// Writes a snapshot of `snapshot` now; returns its sequence number.
    @discardableResult
    func write(_ snapshot: any StoreSnapshot) throws -> (sequence: UInt64, chordsets: Int) {
        let sequence = snapshot.record.head
        try PrivateDirectory.create(directory)
        let final = directory.appendingPathComponent(Self.fileName(sequence))
        let temporary = directory.appendingPathComponent(Self.fileName(sequence) + ".\(UUID().uuidString).tmp")
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw ChordStoreError(.unavailable, "cannot create \(temporary.path)")
        }
        let handle = try FileHandle(forWritingTo: temporary)
        var ok = false
        defer {
            try? handle.close()
            if !ok { try? FileManager.default.removeItem(at: temporary) }
        }
        var hash: UInt64 = 0
        func flush(_ block: inout ProtoWriter) throws {
            let bytes = block.bytes
            hash = bytes.withUnsafeBytes { XXHash64.hash($0, seed: hash) }
            var header = withUnsafeBytes(of: UInt32(bytes.count).littleEndian) { Array($0) }
            withUnsafeBytes(of: hash.littleEndian) { header.append(contentsOf: $0) }
            try handle.write(contentsOf: header + bytes)
            block.removeAll()
        }
        try handle.write(contentsOf: Self.magic)
        var block = ProtoWriter(capacity: Self.blockSize + 4_096)
        block.uint(1, sequence)
        block.tag(4, 1)
        block.fixed64(try snapshot.headChecksum())
        if let controls = try snapshot.controlsChord() { block.message(2) { WireCodec.write(&$0, controls) } }
        // The user order's index in one pass, each chordset's record copied as it is
        // stored (the views' holds no index; a read takes the index from the order).
        let count = try snapshot.chordsetCount()
        var written = 0
        try snapshot.scan(.index, descending: false, after: nil, from: nil) { _, id in
            let found = try snapshot.withChordsetRecord(id) { record in block.message(3) { $0.raw(record) } }
            guard found else { throw ChordStoreError(.dataLoss, "the user order names chordset \(id), which has no record") }
            written += 1
            if block.bytes.count >= Self.blockSize { try flush(&block) }
            return true
        }
        guard written == count else { throw ChordStoreError(.dataLoss, "the user order holds \(written) chordsets; the store counts \(count)") }
        if !block.bytes.isEmpty { try flush(&block) }
        try flush(&block)  // the empty end block
        try handle.synchronize()
        guard rename(temporary.path, final.path) == 0 else {  // atomic, replacing an older copy
            throw DurableFile.failure("rename", temporary.path)
        }
        ok = true
        state.withLock { state in
            if !state.taken.contains(sequence) {
                state.taken.append(sequence)
                state.taken.sort()
            }
        }
        return (sequence, count)
    }

    /// The newest snapshot after `lower` and at or before `upper` that reads back whole
    /// and belongs to this log (`belongs(sequence, checksum)` compares the checksum of the
    /// record it was taken at); `nil` if there is none. A file that fails is forgotten.
    func load(
        after lower: UInt64, atMost upper: UInt64, belongs: (UInt64, UInt64) -> Bool
    ) -> (sequence: UInt64, state: InMemoryState)? {
        for candidate in sequences.reversed() where candidate <= upper && candidate > lower {
            if let (state, checksum) = try? read(candidate), belongs(candidate, checksum) { return (candidate, state) }
            state.withLock { $0.taken.removeAll { $0 == candidate } }
        }
        return nil
    }

    private func read(_ sequence: UInt64) throws -> (InMemoryState, checksum: UInt64) {
        let data = try Data(contentsOf: directory.appendingPathComponent(Self.fileName(sequence)), options: .alwaysMapped)
        return try data.withUnsafeBytes { raw throws -> (InMemoryState, checksum: UInt64) in
            guard raw.count >= 8, raw.prefix(8).elementsEqual(Self.magic) else {
                throw ChordStoreError(.dataLoss, "snapshot \(sequence) does not start with its magic")
            }
            var state = InMemoryState(indexingChords: false)
            var offset = 8
            var hash: UInt64 = 0
            var stored: UInt64?
            var checksum: UInt64 = 0
            while true {
                guard offset + 12 <= raw.count else { throw ChordStoreError(.dataLoss, "snapshot \(sequence) is cut short") }
                let length = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
                let expected = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt64.self))
                offset += 12
                guard offset + length <= raw.count else { throw ChordStoreError(.dataLoss, "snapshot \(sequence) is cut short") }
                let block = UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + length)])
                hash = XXHash64.hash(block, seed: hash)
                guard hash == expected else { throw ChordStoreError(.dataLoss, "snapshot \(sequence) is damaged") }
                offset += length
                if length == 0 { break }
                var r = ProtoReader(block)
                while let (field, wire) = try r.next() {
                    switch field {
                    case 1: try r.expect(wire, 0, field: 1); stored = try r.varint()
                    case 4: try r.expect(wire, 1, field: 4); checksum = try r.fixed64()
                    case 2: try r.expect(wire, 2, field: 2); state.setControlsChord(try WireCodec.readChord(try r.lengthDelimited()))
                    case 3:
                        try r.expect(wire, 2, field: 3)
                        var chordset = try WireCodec.readChordset(try r.lengthDelimited())
                        chordset.index = state.chordsetCount()
                        state.insertChordset(chordset)
                    default: try r.skip(wire)
                    }
                }
            }
            guard stored == sequence else { throw ChordStoreError(.dataLoss, "snapshot file \(sequence) holds another sequence") }
            return (state, checksum)
        }
    }

    static func fileName(_ sequence: UInt64) -> String {
        let digits = String(sequence)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + ".snap"
    }

    static func sequence(ofFile name: String) -> UInt64? {
        guard name.hasSuffix(".snap") else { return nil }
        return UInt64(name.dropLast(5))
    }
}
