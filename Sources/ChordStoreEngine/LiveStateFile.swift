import ChordStoreDomain
import ChordStoreRecords
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The live state saved whole (`DIR/live-state`, ``ChordStore/Options/liveState``): written
/// when the store closes, read when it opens next, which then replays only the log's
/// events after it instead of the whole log.
///
/// The file says which log position it reflects (sequence and checksum). It is used only
/// when the log holds that very record (the checksums chain, so the whole log up to it is
/// the one the state was folded from) and the fold that made it is this version's
/// (``foldVersion``); anything else (a log cut back and written again, a file from
/// another directory, a damaged or unfinished file, another format) is set aside and the
/// log is replayed whole, as before the file. So the file is never needed: removing it
/// costs a longer start, nothing else.
///
/// Layout: 8 bytes of magic (`CSLIVE01`, the `01` the format's version), then blocks,
/// each a 4-byte little-endian length, an 8-byte little-endian XXH64 of its bytes seeded
/// with the previous block's (0 for the first: a block dropped, repeated or moved breaks
/// the chain), and the bytes: whole frames, each a kind (1 byte), a varint length and
/// that many bytes (see ``Kind``). Long lists are split over frames of at most
/// ``frameItems`` items, which the reader appends. The last frame is ``Kind/end``, with
/// counts the reader checks.
enum LiveStateFile {
    /// The file's name in the data directory.
    static let name = "live-state"
    /// The first 8 bytes; the last two are the format's version.
    static let magic = Array("CSLIVE01".utf8)
    /// The fold that made a saved state. A change to how events fold (``Fold``,
    /// ``ChangeFold``, ``StoreFold``, the registry's or the tokens') must raise it: a
    /// state saved by a version that folds differently is then set aside and replayed.
    static let foldVersion: UInt64 = 1
    /// Bytes a block gathers before it is written.
    static let blockSize = 1 << 20
    /// The largest block a reader accepts (a frame never comes near it: see ``frameItems``).
    static let maxBlock = 16 << 20
    /// The most items (sequences, chordsets) one frame holds.
    static let frameItems = 65_536

    /// What a frame holds. A store's frames follow its ``store`` frame.
    enum Kind: UInt8 {
        /// The log's head (sequence, checksum, timestamp, epoch), the largest store id
        /// given and the ``foldVersion`` (varints).
        case head = 1
        /// A store's registry record: its id (4 bytes, big-endian), then ``StoreRecord/bytes``.
        case store = 2
        /// One chordset of the store, in the user order: a `Chordset` message with its index.
        case chordset = 3
        /// The store's controls chord: a `Chord` message.
        case controls = 4
        /// One chordset a delete-all removed: its sequence (varint), then a `Chordset`
        /// message; in the order that delete-all removed them.
        case deleted = 5
        /// Part of a session's undo stack: the session (varint length, bytes), then
        /// sequences (varints), oldest first; ``redo`` and ``sessionHistory`` alike.
        case undo = 6
        case redo = 7
        case sessionHistory = 8
        /// One revision: the key's kind (0 chordset, then its 16-byte id; 1 controls; 2
        /// collection; 3 bulk), its last change, the last by another session (varints) and
        /// the last change's session.
        case revision = 9
        /// Part of one chordset's events: its 16-byte id, then sequences (varints).
        case chordsetHistory = 10
        /// Log positions of the store's events, in order, continuing the previous frame's (varints).
        case logSequences = 11
        /// A command id the store applied: the id (varint length, bytes), then its sequence.
        case command = 12
        /// A token: its id (varint length, bytes), then ``TokenRecord/bytes``.
        case token = 13
        /// The end: the counts of stores, tokens, chordsets and events written (varints).
        case end = 14
        /// The store is evicted from memory (``ChordStore/Options/maxStateMemory``): its
        /// chordsets and chords counted (varints). Its state and changes are not in the
        /// file (no frames of kinds 3 to 10), only its log positions and command ids: a
        /// start folds it from the log. Follows the store's other frames.
        case evicted = 15
    }

    /// What a file held: the state, at `set.logHead`, folded by fold version `fold`.
    struct Loaded {
        var set: StoreSet
        var fold: UInt64
    }

    // MARK: Writing

    /// Writes `set` to `target` through a file beside it (`.new`, written front to back
    /// past the page cache: ``SequentialFileWriter``), synced and renamed over the old
    /// one; the directory is synced. A failure leaves the old file or none.
    /// Returns the file's size in bytes.
    @discardableResult
    static func write(_ set: StoreSet, fold: UInt64 = foldVersion, to target: URL) throws(ChordStoreError) -> Int {
        let temporary = target.path + ".new"
        unlink(temporary)  // left by a save cut short
        do throws(ChordStoreError) {
            let file = try SequentialFileWriter(creating: temporary)
            var writer = BlockWriter(file: file)
            try writer.writeRaw(magic)
            try encode(set, fold: fold, into: &writer)
            try writer.finish()
            try file.finish()
        } catch {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, target.path) == 0 else {
            let error = DurableFile.failure("rename", temporary)
            unlink(temporary)
            throw error
        }
        try DurableFile.sync(target.deletingLastPathComponent().path)
        return size(at: target)
    }

    /// The size in bytes of the file at `url` (0 if there is none).
    static func size(at url: URL) -> Int {
        var info = stat()
        return stat(url.path, &info) == 0 ? Int(info.st_size) : 0
    }

    /// The frames of `set`, in the order ``read(_:)`` takes them (sorted where the set
    /// is not ordered, so that a state gives the same bytes each time).
    private static func encode(_ set: StoreSet, fold: UInt64, into writer: inout BlockWriter) throws(ChordStoreError) {
        var frame = FrameBytes()
        let head = set.logHead
        for value in [head.sequence, head.checksum, UInt64(bitPattern: head.timestamp.microsecondsSince1970), head.epoch, UInt64(set.lastStoreID()), fold] {
            frame.varint(value)
        }
        try writer.frame(.head, &frame)
        let stores = set.stores.values.sorted { $0.record.id < $1.record.id }
        var (chordsets, events) = (0, 0)
        for store in stores {
            withUnsafeBytes(of: store.record.id.bigEndian) { frame.bytes.append(contentsOf: $0) }
            frame.bytes.append(contentsOf: store.record.bytes)
            try writer.frame(.store, &frame)
            if store.evicted == nil {
                chordsets += try encodeState(store.state, into: &writer)
                try encodeChanges(store.changes, into: &writer)
            }
            try encodeLog(store.log, into: &writer)
            if let counts = store.evicted {
                frame.varint(UInt64(counts.chordsets))
                frame.varint(UInt64(counts.chords))
                try writer.frame(.evicted, &frame)
            }
            events += store.log.logSequences.count
        }
        for (id, token) in set.tokens.sorted(by: { $0.key < $1.key }) {
            frame.string(id)
            frame.bytes.append(contentsOf: token.bytes)
            try writer.frame(.token, &frame)
        }
        for count in [stores.count, set.tokens.count, chordsets, events] { frame.varint(UInt64(count)) }
        try writer.frame(.end, &frame)
    }

    /// The state's frames; returns how many chordsets it holds.
    private static func encodeState(_ state: InMemoryState, into writer: inout BlockWriter) throws(ChordStoreError) -> Int {
        var frame = FrameBytes()
        var count = 0
        try state.forEachChordsetInOrder { chordset throws(ChordStoreError) in
            frame.bytes.append(contentsOf: WireCodec.chordsetMessage(chordset))
            try writer.frame(.chordset, &frame)
            count += 1
        }
        if let controls = state.controlsChord() {
            frame.bytes.append(contentsOf: WireCodec.chordRecord(controls))
            try writer.frame(.controls, &frame)
        }
        for (sequence, chordsets) in state.allDeletedChordsets.sorted(by: { $0.key < $1.key }) {
            for chordset in chordsets {
                frame.varint(sequence)
                frame.bytes.append(contentsOf: WireCodec.chordsetMessage(chordset))
                try writer.frame(.deleted, &frame)
            }
        }
        return count
    }

    private static func encodeChanges(_ changes: InMemoryChanges, into writer: inout BlockWriter) throws(ChordStoreError) {
        var frame = FrameBytes()
        for (kind, lists) in [(Kind.undo, changes.undo), (.redo, changes.redo), (.sessionHistory, changes.sessionHistory)] {
            for (session, sequences) in lists.sorted(by: { $0.key < $1.key }) {
                try writeChunked(sequences, kind, into: &writer) { $0.string(session) }
            }
        }
        for (key, revision) in changes.revisions.sorted(by: { Self.order($0.key) < Self.order($1.key) }) {
            switch key {
            case .chordset(let id):
                frame.bytes.append(0)
                frame.id(id)
            case .controls: frame.bytes.append(1)
            case .collection: frame.bytes.append(2)
            case .bulk: frame.bytes.append(3)
            }
            frame.varint(revision.last)
            frame.varint(revision.lastByOther)
            frame.string(revision.lastSession)
            try writer.frame(.revision, &frame)
        }
        for (key, entry) in changes.chordsetTable.sorted(by: { ($0.key.high, $0.key.low) < ($1.key.high, $1.key.low) }) where !entry.history.isEmpty {
            try writeChunked(entry.history, .chordsetHistory, into: &writer) { $0.id(key.id) }
        }
    }

    /// A revision key's place in the file's order: chordsets by id, then the others.
    private static func order(_ key: RevisionKey) -> (UInt8, UInt64, UInt64) {
        switch key {
        case .chordset(let id):
            let key = IDKey(id)
            return (0, key.high, key.low)
        case .controls: return (1, 0, 0)
        case .collection: return (2, 0, 0)
        case .bulk: return (3, 0, 0)
        }
    }

    private static func encodeLog(_ log: InMemoryLog, into writer: inout BlockWriter) throws(ChordStoreError) {
        try writeChunked(log.logSequences, .logSequences, into: &writer) { _ in }
        var frame = FrameBytes()
        for (id, sequence) in log.commands.sorted(by: { $0.key < $1.key }) {
            frame.string(id)
            frame.varint(sequence)
            try writer.frame(.command, &frame)
        }
    }

    /// `sequences` in frames of `kind`, ``frameItems`` at most each, every frame starting
    /// with what `prefix` writes (the list's owner). An empty list still gets one frame.
    private static func writeChunked(
        _ sequences: [UInt64], _ kind: Kind, into writer: inout BlockWriter, prefix: (inout FrameBytes) -> Void
    ) throws(ChordStoreError) {
        var frame = FrameBytes()
        var start = 0
        repeat {
            prefix(&frame)
            for sequence in sequences[start..<min(start + frameItems, sequences.count)] { frame.varint(sequence) }
            try writer.frame(kind, &frame)
            start += frameItems
        } while start < sequences.count
    }

    // MARK: Reading

    /// The state the file at `url` holds; `nil` when there is no file. Throws
    /// `dataLoss` for a file that is damaged, unfinished, inconsistent or of another format.
    /// With `bound` (``ChordStore/Options/maxStateMemory``), stores are kept in memory in
    /// the file's order (by id) while the state stays within three quarters of it
    /// (``ResidencyPlan``); the others are loaded evicted.
    static func read(_ url: URL, bound: Int? = nil) throws(ChordStoreError) -> Loaded? {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        if fd < 0, errno == ENOENT { return nil }
        guard fd >= 0 else { throw DurableFile.failure("open", url.path) }
        defer { close(fd) }
        let reader = BlockReader(fd: fd, path: url.path)
        guard try reader.readRaw(magic.count) == magic else {
            throw ChordStoreError(.dataLoss, "\(url.path) is not a live state file of this format")
        }
        var decoder = Decoder(budget: bound.map { $0 / 4 * 3 })
        // The blocks are read, checked and split, and their chordsets and lists of
        // sequences decoded, on a thread of their own (``produce(_:path:into:)``), a few blocks ahead of this one.
        let channel = Channel<ReadMessage>(capacity: 4)
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread { [reader] in
            GroupCommitWriter.nameThisThread("cs-live-read")
            produce(reader, path: url.path, into: channel)
            finished.signal()
        }
        defer {
            channel.cancel()
            finished.wait()  // before the file is closed
        }
        while true {
            switch channel.receive() {
            case .block(let block):
                guard !decoder.ended else { throw ChordStoreError(.dataLoss, "\(url.path) goes on past its end") }
                let framesAfterEnd = ChordStoreError(.dataLoss, "\(url.path) has frames after its end")
                do {
                    try block.bytes.withUnsafeBytes { bytes in
                        for frame in block.frames {
                            guard !decoder.ended else { throw framesAfterEnd }
                            try decoder.take(frame.kind, UnsafeRawBufferPointer(rebasing: bytes[frame.body]), content: frame.content)
                        }
                    }
                } catch {
                    throw ChordStoreError.wrapping(error)
                }
                if let failure = block.failure {
                    throw decoder.ended ? framesAfterEnd : failure
                }
            case .failure(let error):
                throw error  // after the end frame too: what is there cannot even be read as a block
            case .end:
                guard decoder.ended else {
                    throw ChordStoreError(.dataLoss, "\(url.path) ends before its last frame: it was not written to the end")
                }
                return try decoder.loaded()
            }
        }
    }
}
