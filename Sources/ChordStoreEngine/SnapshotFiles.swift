import ChordStoreDomain
import Foundation
import Synchronization

/// Periodic snapshots of the projected state, one file each in `DIR/snapshots/`, so that
/// a read as of an old point of the log replays at most one interval of events instead
/// of the whole log (see ``TimeTravel``).
///
/// A snapshot is derived data: a missing, partial or damaged file is ignored (reads fall
/// back to an earlier snapshot or to the start of the log), and deleting the folder is
/// always safe. Files are written by a background thread from an LMDB read snapshot
/// (commits never wait for it), to a temporary name, fsynced, then renamed.
///
/// Layout: the magic `CSSNAP01`, then blocks of `[length: UInt32 LE][hash: UInt64 LE]
/// [bytes]`, each hash XXH64 of the block chained to the previous block's hash, and an
/// empty block at the end. The blocks' bytes are protobuf fields: 1 the sequence number,
/// 2 the controls chord, 3 each chordset (with its index) in user order.
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
    }
    private let state: Mutex<State>

    init(directory: URL, interval: UInt64?) {
        self.directory = directory
        self.interval = interval.map { max(1, $0) }
        let taken = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        state = Mutex(State(taken: taken.compactMap(Self.sequence(ofFile:)).sorted()))
    }

    /// The sequence numbers of the snapshots on disk, oldest first.
    var sequences: [UInt64] { state.withLock { $0.taken } }

    /// Starts a snapshot in the background if the log has grown by an interval since the
    /// last one and none is being written.
    func maybeTake(head: UInt64, backend: any StorageBackend) {
        guard let interval else { return }
        let start = state.withLock { state -> Bool in
            let last = state.taken.last ?? 0
            guard !state.busy, head >= last + max(interval, UInt64(state.chordsets)) else { return false }
            state.busy = true
            return true
        }
        guard start else { return }
        Thread.detachNewThread { [self] in
            let written = try? backend.withSnapshot { snapshot in try self.write(snapshot) }
            state.withLock { state in
                state.busy = false
                if let written { state.chordsets = written.chordsets }
            }
        }
    }

    /// Writes a snapshot of `snapshot` now; returns its sequence number.
    @discardableResult
    func write(_ snapshot: any StoreSnapshot) throws -> (sequence: UInt64, chordsets: Int) {
        let sequence = try snapshot.head.sequence
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let final = directory.appendingPathComponent(Self.fileName(sequence))
        let temporary = directory.appendingPathComponent(Self.fileName(sequence) + ".tmp")
        FileManager.default.createFile(atPath: temporary.path, contents: nil)
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
        if let controls = try snapshot.controlsChord() { block.message(2) { WireCodec.write(&$0, controls) } }
        let count = try snapshot.chordsetCount()
        for index in 0..<count {
            guard let id = try snapshot.chordsetID(atIndex: index), let chordset = try snapshot.chordset(id) else {
                throw ChordStoreError(.dataLoss, "no chordset at index \(index) of \(count)")
            }
            block.message(3) { WireCodec.write(&$0, chordset) }
            if block.bytes.count >= Self.blockSize { try flush(&block) }
        }
        if !block.bytes.isEmpty { try flush(&block) }
        try flush(&block)  // the empty end block
        try handle.synchronize()
        if FileManager.default.fileExists(atPath: final.path) { try FileManager.default.removeItem(at: final) }
        try FileManager.default.moveItem(at: temporary, to: final)
        ok = true
        state.withLock { state in
            if !state.taken.contains(sequence) {
                state.taken.append(sequence)
                state.taken.sort()
            }
        }
        return (sequence, count)
    }

    /// The newest snapshot at or before `sequence` that reads back whole, as a state and
    /// its sequence number; `nil` if there is none.
    func load(atMost sequence: UInt64) -> (sequence: UInt64, state: InMemoryState)? {
        for candidate in sequences.reversed() where candidate <= sequence {
            if let state = try? read(candidate) { return (candidate, state) }
        }
        return nil
    }

    private func read(_ sequence: UInt64) throws -> InMemoryState {
        let data = try Data(contentsOf: directory.appendingPathComponent(Self.fileName(sequence)), options: .alwaysMapped)
        return try data.withUnsafeBytes { raw throws -> InMemoryState in
            guard raw.count >= 8, raw.prefix(8).elementsEqual(Self.magic) else {
                throw ChordStoreError(.dataLoss, "snapshot \(sequence) does not start with its magic")
            }
            var state = InMemoryState(indexingChords: false)
            var offset = 8
            var hash: UInt64 = 0
            var stored: UInt64?
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
            return state
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
