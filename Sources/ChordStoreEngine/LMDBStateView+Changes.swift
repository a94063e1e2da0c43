import ChordStoreRecords
import ChordStoreDomain
import Foundation
import LMDB

/// The undo and redo stacks, revisions and histories in their LMDB databases, written in
/// the commit's transaction like the other views.
///
/// A session's stacks and history are linked lists through the `session-links` database
/// (keyed by sequence, so each commit appends at the right edge), headed by one record
/// per session in `sessions` (a few pages however many sessions write). A stack push or
/// pop, a clear of the redo stack and a history entry are O(1) and touch pages the
/// commit dirties anyway, instead of one page per session.
extension LMDBStateView: ChangeWriting, ChangeLogReading {
    func change(at sequence: UInt64) throws -> Change? {
        try recordedEvent(sequence)?.change
    }

    func undoTop(_ session: String) throws -> UInt64? { try nonZero(sessionRecord(session).undoTop) }
    func redoTop(_ session: String) throws -> UInt64? { try nonZero(sessionRecord(session).redoTop) }

    func redoDepth(_ session: String, atMost limit: Int) throws -> Int {
        guard limit > 0 else { return 0 }
        return Int(min(UInt64(limit), try sessionRecord(session).redoDepth))
    }

    func revision(_ key: RevisionKey) throws -> Revision? {
        if let pending, PendingRevisions.holds(key), let revision = pending.revision(store: record.id, key) { return revision }
        guard let value = try scoped.get(dbs.revisions, key: KeyBytes.revision(key)) else { return nil }
        return try StoreKeys.revision(value)
    }

    mutating func pushUndo(_ session: String, _ sequence: UInt64) throws {
        var record = try sessionRecord(session)
        let below = record.pushUndo(sequence)
        try updateLink(sequence) { $0.below = below }
        try putSessionRecord(session, record)
    }

    mutating func popUndo(_ session: String, _ sequence: UInt64) throws {
        var record = try sessionRecord(session)
        try record.popUndo(sequence, of: session) { try link(sequence).below }
        try putSessionRecord(session, record)
    }

    mutating func pushRedo(_ session: String, _ sequence: UInt64) throws {
        var record = try sessionRecord(session)
        let below = try record.pushRedo(sequence, of: session)
        try updateLink(sequence) { $0.below = below }
        try putSessionRecord(session, record)
    }

    mutating func popRedo(_ session: String, _ sequence: UInt64) throws {
        var record = try sessionRecord(session)
        try record.popRedo(sequence, of: session) { try link(sequence).below }
        try putSessionRecord(session, record)
    }

    mutating func clearRedo(_ session: String) throws {
        var record = try sessionRecord(session)
        if record.clearRedo() { try putSessionRecord(session, record) }
    }

    /// The steps of ``ChangeWriting/noteSessionChange(_:_:mark:)`` (``SessionRecord``'s)
    /// on one read and one write of the session's record, and one new link for
    /// `sequence` (its stack entry and its place in the history in one entry), where the
    /// steps one by one read the record three times, wrote it two or three times and
    /// wrote the new link twice.
    /// The record is read and written back through one cursor (one search of its tree),
    /// and so is the link it updates.
    mutating func noteSessionChange(_ session: String, _ sequence: UInt64, mark: ChangeMark?) throws {
        try StoreKeys.withSession(session) { key in
            try scoped.update(dbs.sessions, key: key) { present in
                var record = try present.map { try Self.sessionRecord($0, of: session) } ?? SessionRecord()
                var link = SessionLink()
                switch mark {
                case nil:
                    link.below = record.pushUndo(sequence)
                    _ = record.clearRedo()
                case .undoes(let target):
                    try record.popUndo(target, of: session) { try self.link(target).below }
                    link.below = try record.pushRedo(sequence, of: session)
                case .redoes(let target):
                    try record.popRedo(target, of: session) { try self.link(target).below }
                    link.below = record.pushUndo(sequence)
                }
                link.previous = record.appendHistory(sequence)
                if link.previous != 0 { try updateLink(link.previous) { $0.next = sequence } }
                try scoped.putAtEnd(dbs.links, key: KeyBytes.sequence(sequence), value: link.bytes)
                return record.bytes
            }
        }
    }

    /// Reads the revision and writes the next in one search of the tree (a new key, a new
    /// chordset's, is the more common); the store-wide ones go to the transaction's
    /// ``PendingRevisions``.
    mutating func advanceRevision(_ key: RevisionKey, to sequence: UInt64, by session: String) throws {
        if pending != nil, PendingRevisions.holds(key) {
            return try setRevision(key, Revision.advancing(try revision(key), to: sequence, by: session))
        }
        try scoped.upsert(
            dbs.revisions, key: KeyBytes.revision(key),
            absent: { write in try StoreKeys.withRevision(Revision.advancing(nil, to: sequence, by: session), write) },
            present: { bytes, write in
                let advanced = Revision.advancing(try StoreKeys.revision(bytes), to: sequence, by: session)
                try StoreKeys.withRevision(advanced, write)
            })
    }

    mutating func setRevision(_ key: RevisionKey, _ revision: Revision) throws {
        if let pending, PendingRevisions.holds(key) { return pending.set(store: record.id, key, revision) }
        try scoped.putRevision(dbs.revisions, key, revision)
    }

    /// An added chordset's history key: likely the store's last where its id is
    /// time-ordered (the writer's are); a restored one's is not, and is put after the
    /// append is refused.
    mutating func noteHistory(addedChordset: UUID, _ sequence: UInt64) throws {
        guard addedChordset.isTimeOrdered else { return try noteHistory(chordset: addedChordset, sequence) }
        try scoped.putAtEnd(dbs.chordsetHistory, key: KeyBytes.history(addedChordset, sequence), value: [UInt8]())
    }

    mutating func noteHistory(chordset: UUID, _ sequence: UInt64) throws {
        try scoped.put(dbs.chordsetHistory, key: KeyBytes.history(chordset, sequence), value: [UInt8]())
    }

    mutating func noteHistory(session: String, _ sequence: UInt64) throws {
        var record = try sessionRecord(session)
        let previous = record.appendHistory(sequence)
        if previous != 0 { try updateLink(previous) { $0.next = sequence } }
        try updateLink(sequence) { $0.previous = previous }
        try putSessionRecord(session, record)
    }

    // MARK: Reading histories

    /// Up to `limit` sequence numbers of the chordset's history after `after`.
    func history(chordset: UUID, after: UInt64, limit: Int) throws -> [UInt64] {
        let prefix = StoreKeys.id(chordset)
        var result: [UInt64] = []
        guard limit > 0, after < UInt64.max else { return result }
        try scoped.withCursor(dbs.chordsetHistory) { cursor in
            var entry = try KeyBytes.history(chordset, after + 1).withViewBytes { try cursor.seek(atLeast: $0) }
            while let current = entry, current.key.count == 24, current.key.starts(with: prefix), result.count < limit {
                result.append(try StoreKeys.sequence(UnsafeRawBufferPointer(rebasing: current.key[16...])))
                entry = try cursor.next()
            }
        }
        return result
    }

    /// Up to `limit` sequence numbers of the session's history after `after`. Following
    /// the session's links from one of its own events is O(limit); from any other
    /// sequence, the links are first walked back from its last event.
    func history(session: String, after: UInt64, limit: Int) throws -> [UInt64] {
        var result: [UInt64] = []
        guard limit > 0 else { return result }
        let record = try sessionRecord(session)
        var next: UInt64
        if after == 0 || after < record.first {
            next = record.first
        } else if after >= record.last {
            return result
        } else if try change(at: after)?.session == session {
            next = try link(after).next
        } else {
            // Walk back to the session's last event at or before `after`.
            var candidate = record.last
            var steps = 0
            while candidate > after {
                let previous = try link(candidate).previous
                guard previous < candidate else { throw ChordStoreError(.dataLoss, "the session links of event \(candidate) loop") }
                steps += 1
                guard steps <= 100_000 else {
                    throw ChordStoreError(
                        .resourceExhausted,
                        "event \(after) is not session \(session)'s; page with the next_after of a previous page")
                }
                candidate = previous
            }
            next = candidate == 0 ? record.first : try link(candidate).next
        }
        while next != 0, result.count < limit {
            result.append(next)
            next = try link(next).next
        }
        return result
    }

    func deletedChordsetsCount() throws -> Int { try scoped.count(dbs.graveyard) }

    /// Everything in the change databases as plain values (what verify compares with a
    /// replay): the stacks and histories walked from each session's record.
    func changesDump() throws -> InMemoryChanges {
        var dump = InMemoryChanges()
        var sessions: [(String, SessionRecord)] = []
        try forEachKey(dbs.sessions) { key, value in
            guard let length = key.first.map(Int.init), key.count == 1 + length, let record = SessionRecord(value) else {
                throw ChordStoreError(.dataLoss, "a session record is damaged (\(key.count)-byte key, \(value.count)-byte value)")
            }
            sessions.append((String(decoding: UnsafeRawBufferPointer(rebasing: key[1...]), as: UTF8.self), record))
        }
        for (session, record) in sessions {
            for sequence in try walk(from: record.undoTop, \.below).reversed() { dump.pushUndo(session, sequence) }
            let redo = try walk(from: record.redoTop, \.below)
            guard redo.count == record.redoDepth else {
                throw ChordStoreError(.dataLoss, "session \(session)'s redo stack holds \(redo.count) entries; its record says \(record.redoDepth)")
            }
            for sequence in redo.reversed() { dump.pushRedo(session, sequence) }
            for sequence in try walk(from: record.first, \.next) { dump.noteHistory(session: session, sequence) }
        }
        try forEachKey(dbs.revisions) { key, value in
            dump.setRevision(try StoreKeys.revisionKey(key), try StoreKeys.revision(value))
        }
        try forEachKey(dbs.chordsetHistory) { key, _ in
            guard key.count == 24 else { throw ChordStoreError(.dataLoss, "a chordset history key is \(key.count) bytes") }
            dump.noteHistory(chordset: StoreKeys.id(key), try StoreKeys.sequence(UnsafeRawBufferPointer(rebasing: key[16...])))
        }
        return dump
    }

    // MARK: Records and links

    private func sessionRecord(_ session: String) throws -> SessionRecord {
        guard let bytes = try StoreKeys.withSession(session, { try scoped.get(dbs.sessions, key: $0) }) else { return SessionRecord() }
        return try Self.sessionRecord(bytes, of: session)
    }

    /// The record `bytes` hold, or the refusal of a damaged one.
    private static func sessionRecord(_ bytes: UnsafeRawBufferPointer, of session: String) throws -> SessionRecord {
        guard let record = SessionRecord(bytes) else {
            throw ChordStoreError(.dataLoss, "the record of session \(session) is \(bytes.count) bytes; it should be 40")
        }
        return record
    }

    private func putSessionRecord(_ session: String, _ record: SessionRecord) throws {
        try StoreKeys.withSession(session) { try scoped.put(dbs.sessions, key: $0, value: record.bytes) }
    }

    private func link(_ sequence: UInt64) throws -> SessionLink {
        guard let bytes = try scoped.get(dbs.links, key: KeyBytes.sequence(sequence)) else {
            throw ChordStoreError(.dataLoss, "event \(sequence) has no session link")
        }
        guard let link = SessionLink(bytes) else {
            throw ChordStoreError(.dataLoss, "the session link of event \(sequence) is \(bytes.count) bytes")
        }
        return link
    }

    private func updateLink(_ sequence: UInt64, _ change: (inout SessionLink) -> Void) throws {
        try scoped.update(dbs.links, key: KeyBytes.sequence(sequence)) { present in
            var link = present.flatMap(SessionLink.init) ?? SessionLink()
            change(&link)
            return link.bytes
        }
    }

    /// The sequence numbers reached from `start` by following `step` (at most the log's
    /// length, so a cycle in damaged links ends in an error, not a hang).
    private func walk(from start: UInt64, _ step: KeyPath<SessionLink, UInt64>) throws -> [UInt64] {
        var result: [UInt64] = []
        var current = start
        let bound = record.head
        while current != 0 {
            guard result.count <= bound else { throw ChordStoreError(.dataLoss, "the session links loop") }
            result.append(current)
            current = try link(current)[keyPath: step]
        }
        return result
    }

    private func nonZero(_ value: UInt64) -> UInt64? { value == 0 ? nil : value }

    private func forEachKey(_ db: Database, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void) throws {
        try scoped.withCursor(db) { cursor in
            var entry = try cursor.first()
            while let current = entry {
                try body(current.key, current.value)
                entry = try cursor.next()
            }
        }
    }
}
