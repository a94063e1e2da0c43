import ChordStoreDomain
import Foundation
import LMDB

/// The undo and redo stacks, revisions and histories in their LMDB databases, written in
/// the commit's transaction like the other views.
extension LMDBStateView: ChangeWriting, ChangeLogReading {
    func change(at sequence: UInt64) throws -> Change? {
        guard let record = try txn.get(dbs.log, key: StoreKeys.sequence(sequence)) else { return nil }
        return try RecordCodec.decode(record, sequence: sequence).change
    }

    func undoTop(_ session: String) throws -> UInt64? { try top(dbs.undo, StoreKeys.session(session)) }
    func redoTop(_ session: String) throws -> UInt64? { try top(dbs.redo, StoreKeys.session(session)) }

    func redoDepth(_ session: String, atMost limit: Int) throws -> Int {
        guard limit > 0 else { return 0 }
        var count = 0
        try forEachSequence(dbs.redo, prefix: StoreKeys.session(session), after: 0) { _ in
            count += 1
            return count < limit
        }
        return count
    }

    func revision(_ key: RevisionKey) throws -> Revision? {
        guard let value = try txn.get(dbs.revisions, key: StoreKeys.revision(key)) else { return nil }
        return try StoreKeys.revision(value)
    }

    mutating func pushUndo(_ session: String, _ sequence: UInt64) throws {
        try txn.put(dbs.undo, key: StoreKeys.session(session) + StoreKeys.sequence(sequence), value: [UInt8]())
    }

    mutating func popUndo(_ session: String, _ sequence: UInt64) throws {
        _ = try txn.delete(dbs.undo, key: StoreKeys.session(session) + StoreKeys.sequence(sequence))
    }

    mutating func pushRedo(_ session: String, _ sequence: UInt64) throws {
        try txn.put(dbs.redo, key: StoreKeys.session(session) + StoreKeys.sequence(sequence), value: [UInt8]())
    }

    mutating func popRedo(_ session: String, _ sequence: UInt64) throws {
        _ = try txn.delete(dbs.redo, key: StoreKeys.session(session) + StoreKeys.sequence(sequence))
    }

    mutating func clearRedo(_ session: String) throws {
        let prefix = StoreKeys.session(session)
        var sequences: [UInt64] = []
        try forEachSequence(dbs.redo, prefix: prefix, after: 0) { sequences.append($0); return true }
        for sequence in sequences { _ = try txn.delete(dbs.redo, key: prefix + StoreKeys.sequence(sequence)) }
    }

    mutating func setRevision(_ key: RevisionKey, _ revision: Revision) throws {
        try txn.put(dbs.revisions, key: StoreKeys.revision(key), value: StoreKeys.revision(revision))
    }

    mutating func noteHistory(chordset: UUID, _ sequence: UInt64) throws {
        try txn.put(dbs.chordsetHistory, key: StoreKeys.id(chordset) + StoreKeys.sequence(sequence), value: [UInt8]())
    }

    mutating func noteHistory(session: String, _ sequence: UInt64) throws {
        try txn.put(dbs.sessionHistory, key: StoreKeys.session(session) + StoreKeys.sequence(sequence), value: [UInt8]())
    }

    // MARK: Reading histories

    /// Up to `limit` sequence numbers of the chordset's history after `after`.
    func history(chordset: UUID, after: UInt64, limit: Int) throws -> [UInt64] {
        try sequences(dbs.chordsetHistory, prefix: StoreKeys.id(chordset), after: after, limit: limit)
    }

    /// Up to `limit` sequence numbers of the session's history after `after`.
    func history(session: String, after: UInt64, limit: Int) throws -> [UInt64] {
        try sequences(dbs.sessionHistory, prefix: StoreKeys.session(session), after: after, limit: limit)
    }

    func deletedChordsetsCount() throws -> Int { try txn.stat(dbs.graveyard).entries }

    /// Everything in the change databases as plain values (what verify compares with a
    /// replay).
    func changesDump() throws -> InMemoryChanges {
        var dump = InMemoryChanges()
        try forEachKey(dbs.undo) { key, _ in
            let (session, sequence) = try StoreKeys.sessionAndSequence(key)
            dump.pushUndo(session, sequence)
        }
        try forEachKey(dbs.redo) { key, _ in
            let (session, sequence) = try StoreKeys.sessionAndSequence(key)
            dump.pushRedo(session, sequence)
        }
        try forEachKey(dbs.revisions) { key, value in
            dump.setRevision(try StoreKeys.revisionKey(key), try StoreKeys.revision(value))
        }
        try forEachKey(dbs.chordsetHistory) { key, _ in
            guard key.count == 24 else { throw ChordStoreError(.dataLoss, "a chordset history key is \(key.count) bytes") }
            dump.noteHistory(chordset: StoreKeys.id(key), try StoreKeys.sequence(UnsafeRawBufferPointer(rebasing: key[16...])))
        }
        try forEachKey(dbs.sessionHistory) { key, _ in
            let (session, sequence) = try StoreKeys.sessionAndSequence(key)
            dump.noteHistory(session: session, sequence)
        }
        return dump
    }

    private func forEachKey(_ db: Database, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void) throws {
        try txn.withCursor(db) { cursor in
            var entry = try cursor.first()
            while let current = entry {
                try body(current.key, current.value)
                entry = try cursor.next()
            }
        }
    }

    private func sequences(_ db: Database, prefix: [UInt8], after: UInt64, limit: Int) throws -> [UInt64] {
        var result: [UInt64] = []
        guard limit > 0 else { return result }
        try forEachSequence(db, prefix: prefix, after: after) { sequence in
            result.append(sequence)
            return result.count < limit
        }
        return result
    }

    /// Calls `body` with each sequence number under `prefix` greater than `after`, in
    /// order, until it returns `false`.
    private func forEachSequence(_ db: Database, prefix: [UInt8], after: UInt64, _ body: (UInt64) throws -> Bool) throws {
        guard after < UInt64.max else { return }
        let start = prefix + StoreKeys.sequence(after + 1)
        try txn.withCursor(db) { cursor in
            var entry = try start.withUnsafeBytes { try cursor.seek(atLeast: $0) }
            while let current = entry, current.key.count == prefix.count + 8, current.key.starts(with: prefix) {
                guard try body(StoreKeys.sequence(UnsafeRawBufferPointer(rebasing: current.key[prefix.count...]))) else { return }
                entry = try cursor.next()
            }
        }
    }

    /// The greatest sequence number under `prefix`.
    private func top(_ db: Database, _ prefix: [UInt8]) throws -> UInt64? {
        let end = prefix + [UInt8](repeating: 0xFF, count: 8)
        return try txn.withCursor(db) { cursor -> UInt64? in
            let after = try end.withUnsafeBytes { try cursor.seek(atLeast: $0) }
            let candidate = after == nil ? try cursor.last() : try cursor.previous()
            guard let entry = candidate, entry.key.count == prefix.count + 8, entry.key.starts(with: prefix) else { return nil }
            return try StoreKeys.sequence(UnsafeRawBufferPointer(rebasing: entry.key[prefix.count...]))
        }
    }
}
