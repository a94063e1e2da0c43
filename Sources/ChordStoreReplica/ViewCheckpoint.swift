import ChordStoreDomain
import ChordStoreRecords
import Foundation

/// A saved copy of the confirmed view (``ReplicaView``) as far as some copied event, so
/// that opening a replica folds only the events after it instead of the whole copy.
///
/// It is derived data, in its own file (`view.checkpoint`, beside `events.sqlite`): a
/// missing, partial, damaged or stale file is ignored and the view is folded from the
/// copied events, as without it; deleting it is always safe. It belongs to one copy of
/// the events and one device session: it records the checksum of the copied event at its
/// head (a checkpoint of another copy, or of a store replaced, does not match it) and the
/// session whose own changes it keeps (a copied directory starts a new session and folds).
///
/// Layout: the magic `CSVIEW01`, the XXH64 of the rest (8 bytes, little-endian), then
/// protobuf fields: 1 the head, 2 the session, 3 the copied event's checksum at the head
/// (fixed64), 4 the controls chord, 5 each chordset (with its index) in user order, 6 each
/// delete-all's removed chordsets {1 sequence, 2 chordset…}, 7 and 8 each session's undo
/// and redo stack {1 session, 2 packed sequences}, 9 each revision {1 kind (1 chordset,
/// 2 controls, 3 collection, 4 bulk), 2 chordset id, 3 last, 4 last session, 5 last by
/// another}, 10 each chordset's history {1 id, 2 packed}, 11 each session's history
/// {1 session, 2 packed}, 12 each of the device session's own changes (an
/// `EventEnvelope` with its command id; no epoch, time or checksum), 13 the version of
/// the fold that made it (``foldVersion``: a view folded by an older rule is not used).
enum ViewCheckpoint {
    static let fileName = "view.checkpoint"
    static let magic = Array("CSVIEW01".utf8)
    /// The version of the fold (the domain's `Fold` and `ChangeFold` as this build applies
    /// them): raised when a change of theirs would fold the same events into another
    /// view, so that views saved by an older build are folded again.
    static let foldVersion: UInt64 = 1

    /// What a checkpoint file holds, read back.
    struct Saved {
        var view: ReplicaView
        var session: String
        /// The checksum of the copied event at the view's head.
        var eventChecksum: UInt64
    }

    static func file(in directory: URL) -> URL { directory.appendingPathComponent(fileName) }

    /// Writes `view` to the directory's checkpoint file (a temporary file renamed over it:
    /// a reader sees the old file or the new one, never part of one).
    static func write(_ view: ReplicaView, session: String, eventChecksum: UInt64, in directory: URL) throws {
        var body = encode(view, session: session, eventChecksum: eventChecksum)
        let hash = body.withUnsafeBytes { XXHash64.hash($0) }
        var bytes = magic
        bytes.reserveCapacity(magic.count + 8 + body.count)
        withUnsafeBytes(of: hash.littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: body)
        body = []  // freed before the write copies `bytes` again: the peak is two copies, not three
        try Data(bytes).write(to: file(in: directory), options: .atomic)
    }

    /// Reads the directory's checkpoint, or `nil` when there is none. A file that is not a
    /// whole checkpoint (damaged, cut short, another format) throws.
    static func read(in directory: URL) throws(ChordStoreError) -> Saved? {
        let path = file(in: directory)
        guard FileManager.default.fileExists(atPath: path.path) else { return nil }
        let data: Data
        do {
            data = try Data(contentsOf: path)
        } catch {
            throw ChordStoreError(.unavailable, "cannot read the saved view: \(error.localizedDescription)")
        }
        do {
            return try data.withUnsafeBytes { raw throws(ChordStoreError) -> Saved in
                guard raw.count >= magic.count + 8, raw.prefix(magic.count).elementsEqual(magic) else {
                    throw ChordStoreError(.dataLoss, "the saved view is not a checkpoint of this format")
                }
                let stored = raw.loadUnaligned(fromByteOffset: magic.count, as: UInt64.self).littleEndian
                let body = UnsafeRawBufferPointer(rebasing: raw[(magic.count + 8)...])
                guard XXHash64.hash(body) == stored else {
                    throw ChordStoreError(.dataLoss, "the saved view is damaged: its checksum does not match")
                }
                return try decode(body)
            }
        } catch let error as ChordStoreError {
            throw error
        } catch {
            throw ChordStoreError(.dataLoss, "the saved view does not read: \(error)")
        }
    }

    static func remove(in directory: URL) {
        try? FileManager.default.removeItem(at: file(in: directory))
    }

    // MARK: Encoding

    static func encode(_ view: ReplicaView, session: String, eventChecksum: UInt64) -> [UInt8] {
        var w = ProtoWriter(capacity: 64 + view.state.chordsetCount() * 600)
        w.uint(1, view.head)
        w.uint(13, foldVersion)
        w.string(2, session)
        w.tag(3, 1)
        w.fixed64(eventChecksum)
        let state = view.state
        if let controls = state.controlsChord() { w.message(4) { WireCodec.write(&$0, controls) } }
        for id in state.chordsetIDsInOrder {
            guard let chordset = state.chordset(id) else { continue }
            w.message(5) { WireCodec.write(&$0, chordset) }
        }
        for (sequence, chordsets) in state.allDeletedChordsets.sorted(by: { $0.key < $1.key }) {
            w.message(6) { inner in
                inner.uint(1, sequence)
                for chordset in chordsets { inner.message(2) { WireCodec.write(&$0, chordset) } }
            }
        }
        let changes = view.changes
        for (field, stacks) in [(7, changes.undo), (8, changes.redo)] {
            for (owner, stack) in stacks.sorted(by: { $0.key < $1.key }) {
                w.message(field) { inner in
                    inner.string(1, owner)
                    packed(&inner, 2, stack)
                }
            }
        }
        for (key, revision) in changes.revisions {
            w.message(9) { inner in
                switch key {
                case .chordset(let id):
                    inner.uint(1, 1)
                    WireCodec.write(&inner, id: 2, id)
                case .controls: inner.uint(1, 2)
                case .collection: inner.uint(1, 3)
                case .bulk: inner.uint(1, 4)
                }
                inner.uint(3, revision.last)
                inner.string(4, revision.lastSession)
                inner.uint(5, revision.lastByOther)
            }
        }
        for (key, entry) in changes.chordsetTable where !entry.history.isEmpty {
            w.message(10) { inner in
                WireCodec.write(&inner, id: 1, key.id)
                packed(&inner, 2, entry.history)
            }
        }
        for (owner, sequences) in changes.sessionHistory.sorted(by: { $0.key < $1.key }) {
            w.message(11) { inner in
                inner.string(1, owner)
                packed(&inner, 2, sequences)
            }
        }
        for (sequence, change) in view.ownChanges.sorted(by: { $0.key < $1.key }) {
            let recorded = RecordedEvent(
                sequence: sequence, epoch: 0, timestamp: Instant(microsecondsSince1970: 0), session: change.session,
                commandID: view.ownCommandIDs[sequence] ?? "", event: change.event, checksum: 0, mark: change.mark)
            WireCodec.envelope(recorded).withUnsafeBytes { w.bytes(12, $0) }
        }
        return w.bytes
    }

    private static func packed(_ w: inout ProtoWriter, _ field: Int, _ values: [UInt64]) {
        var inner = ProtoWriter(capacity: values.count * 3)
        for value in values { inner.varint(value) }
        inner.bytes.withUnsafeBytes { w.bytes(field, $0) }
    }

    // MARK: Decoding

    static func decode(_ raw: UnsafeRawBufferPointer) throws(ChordStoreError) -> Saved {
        var r = ProtoReader(raw)
        var view = ReplicaView()
        var session = ""
        var eventChecksum: UInt64?
        var version: UInt64 = 0
        var undo: [String: [UInt64]] = [:], redo: [String: [UInt64]] = [:]
        var revisions: [RevisionKey: Revision] = [:]
        var chordsetHistory: [UUID: [UInt64]] = [:], sessionHistory: [String: [UInt64]] = [:]
        while let (field, wire) = try r.next() {
            switch field {
            case 1: try r.expect(wire, 0, field: 1); view.head = try r.varint()
            case 2: try r.expect(wire, 2, field: 2); session = try r.string()
            case 3: try r.expect(wire, 1, field: 3); eventChecksum = try r.fixed64()
            case 4: try r.expect(wire, 2, field: 4); view.state.setControlsChord(try WireCodec.readChord(try r.lengthDelimited()))
            case 5:
                try r.expect(wire, 2, field: 5)
                var chordset = try WireCodec.readChordset(try r.lengthDelimited())
                chordset.index = view.state.chordsetCount()
                view.state.insertChordset(chordset)
            case 6:
                try r.expect(wire, 2, field: 6)
                let (sequence, chordsets) = try readDeleted(try r.lengthDelimited())
                view.state.adoptDeletedChordsets(chordsets, at: sequence)
            case 7, 8, 11:
                try r.expect(wire, 2, field: field)
                let (owner, sequences) = try readSequences(try r.lengthDelimited()) { reader throws(ChordStoreError) in try reader.string() }
                switch field {
                case 7: undo[owner] = sequences
                case 8: redo[owner] = sequences
                default: sessionHistory[owner] = sequences
                }
            case 9:
                try r.expect(wire, 2, field: 9)
                let (key, revision) = try readRevision(try r.lengthDelimited())
                revisions[key] = revision
            case 10:
                try r.expect(wire, 2, field: 10)
                let (id, sequences) = try readSequences(try r.lengthDelimited()) { reader throws(ChordStoreError) in
                    try WireCodec.readID(try reader.lengthDelimited())
                }
                chordsetHistory[id] = sequences
            case 13: try r.expect(wire, 0, field: 13); version = try r.varint()
            case 12:
                try r.expect(wire, 2, field: 12)
                let recorded = try WireCodec.readEnvelope(try r.lengthDelimited())
                view.ownChanges[recorded.sequence] = recorded.change
                if !recorded.commandID.isEmpty { view.ownCommandIDs[recorded.sequence] = recorded.commandID }
            default: try r.skip(wire)
            }
        }
        guard version == foldVersion else {
            throw ChordStoreError(.dataLoss, "the saved view was folded by another version of the fold (\(version); this build folds \(foldVersion))")
        }
        guard let eventChecksum, view.head > 0, !session.isEmpty else {
            throw ChordStoreError(.dataLoss, "the saved view has no head, session or event checksum")
        }
        view.changes = InMemoryChanges(
            undo: undo, redo: redo, revisions: revisions, chordsetHistory: chordsetHistory, sessionHistory: sessionHistory)
        return Saved(view: view, session: session, eventChecksum: eventChecksum)
    }

    private static func readDeleted(_ raw: UnsafeRawBufferPointer) throws(ChordStoreError) -> (UInt64, [Chordset]) {
        var r = ProtoReader(raw)
        var sequence: UInt64 = 0
        var chordsets: [Chordset] = []
        while let (field, wire) = try r.next() {
            switch field {
            case 1: try r.expect(wire, 0, field: 1); sequence = try r.varint()
            case 2: try r.expect(wire, 2, field: 2); chordsets.append(try WireCodec.readChordset(try r.lengthDelimited()))
            default: try r.skip(wire)
            }
        }
        return (sequence, chordsets)
    }

    /// A message of an owner (field 1, read by `owner`) and packed sequences (field 2).
    private static func readSequences<Owner>(
        _ raw: UnsafeRawBufferPointer, _ owner: (inout ProtoReader) throws(ChordStoreError) -> Owner
    ) throws(ChordStoreError) -> (Owner, [UInt64]) {
        var r = ProtoReader(raw)
        var found: Owner?
        var sequences: [UInt64] = []
        while let (field, wire) = try r.next() {
            switch field {
            case 1: try r.expect(wire, 2, field: 1); found = try owner(&r)
            case 2:
                try r.expect(wire, 2, field: 2)
                var packed = ProtoReader(try r.lengthDelimited())
                while !packed.isAtEnd { sequences.append(try packed.varint()) }
            default: try r.skip(wire)
            }
        }
        guard let found else { throw ChordStoreError(.dataLoss, "a stack or history of the saved view names no owner") }
        return (found, sequences)
    }

    private static func readRevision(_ raw: UnsafeRawBufferPointer) throws(ChordStoreError) -> (RevisionKey, Revision) {
        var r = ProtoReader(raw)
        var kind: UInt64 = 0
        var id: UUID?
        var revision = Revision(last: 0, lastSession: "", lastByOther: 0)
        while let (field, wire) = try r.next() {
            switch field {
            case 1: try r.expect(wire, 0, field: 1); kind = try r.varint()
            case 2: try r.expect(wire, 2, field: 2); id = try WireCodec.readID(try r.lengthDelimited())
            case 3: try r.expect(wire, 0, field: 3); revision.last = try r.varint()
            case 4: try r.expect(wire, 2, field: 4); revision.lastSession = try r.string()
            case 5: try r.expect(wire, 0, field: 5); revision.lastByOther = try r.varint()
            default: try r.skip(wire)
            }
        }
        let key: RevisionKey
        switch (kind, id) {
        case (1, let id?): key = .chordset(id)
        case (2, _): key = .controls
        case (3, _): key = .collection
        case (4, _): key = .bulk
        default: throw ChordStoreError(.dataLoss, "a revision of the saved view has an unknown kind \(kind)")
        }
        return (key, revision)
    }
}
