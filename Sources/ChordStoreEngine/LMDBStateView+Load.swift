import ChordStoreRecords
import ChordStoreDomain
import Foundation

extension LMDBStateView {
    /// The store's state, changes and index into the log as a replay of its events up to
    /// the views' last one gives them (``StoreSet/Store``, without records, its chords
    /// indexed): what a live state loads from the views instead of replaying the log.
    /// `emptyDeleteAlls` are the store's delete-alls of no chordset, which the views keep
    /// no entry for (their reads ask the log) and a replay keeps (as every delete-all's
    /// chordsets, restored or not).
    func loadedStore(emptyDeleteAlls: [UInt64]) throws -> StoreSet.Store {
        var state = InMemoryState(indexingChords: true)
        let chordsets = try chordsets(order: .index, limit: nil)
        state.reserveCapacity(chordsets: chordsets.count)
        for chordset in chordsets { state.insertChordset(chordset) }
        state.setControlsChord(try controlsChord())
        var buried: [UInt64] = []
        try forEachKey(dbs.graveyard) { key, _ in
            guard key.count == 12 else { throw ChordStoreError(.dataLoss, "a deleted chordset's key is \(key.count) bytes") }
            let sequence = try StoreKeys.sequence(UnsafeRawBufferPointer(rebasing: key[..<8]))
            if buried.last != sequence { buried.append(sequence) }
        }
        for sequence in buried {
            state.adoptDeletedChordsets(try deletedChordsets(at: sequence) ?? [], at: sequence)
        }
        for sequence in emptyDeleteAlls { state.adoptDeletedChordsets([], at: sequence) }
        var logSequences: [UInt64] = []
        logSequences.reserveCapacity(Int(clamping: record.head))
        try forEachKey(dbs.storeLog) { key, value in
            guard try StoreKeys.sequence(key) == UInt64(logSequences.count + 1) else {
                throw ChordStoreError(.dataLoss, "store \(record.name)'s index into the log skips its event \(logSequences.count + 1)")
            }
            logSequences.append(try StoreKeys.sequence(value))
        }
        guard logSequences.count == Int(clamping: record.head) else {
            throw ChordStoreError(.dataLoss, "store \(record.name)'s index into the log holds \(logSequences.count) events; its head is \(record.head)")
        }
        var commands: [String: UInt64] = [:]
        try forEachKey(dbs.commands) { key, value in
            commands[String(decoding: key, as: UTF8.self)] = try StoreKeys.sequence(value)
        }
        return StoreSet.Store(
            record: record, state: state, changes: try changesDump(), log: InMemoryLog(logSequences: logSequences, commands: commands))
    }
}

extension StoreSet {
    /// Every store of `views` (the LMDB views at one commit) as a live state: what a replay
    /// of the log up to their last event gives, without the records. The log is read
    /// once, each record's delete-all fields only, for the empty delete-alls the views do
    /// not keep (``LMDBStateView/loadedStore(emptyDeleteAlls:)``).
    static func loaded(from views: LMDBStoreSpace, log: some RecordSource) throws -> StoreSet {
        var empty: [UInt32: [UInt64]] = [:]
        try log.forEachRecord(from: 1) { logSequence, record in
            guard logSequence <= views.logHead.sequence else { return false }
            if let deleteAll = try WireCodec.readDeleteAll(record), deleteAll.count == 0 {
                empty[deleteAll.store, default: []].append(deleteAll.sequence)
            }
            return true
        }
        var set = StoreSet(keepsRecords: false)
        for record in try views.stores(after: nil, limit: .max) {
            guard let view = try views.snapshot(of: record) as? LMDBStateView else {
                throw ChordStoreError(.internal, "the views of store \(record.name) are not LMDB's")
            }
            set.adopt(try view.loadedStore(emptyDeleteAlls: empty[record.id] ?? []))
        }
        set.adopt(lastStoreID: try views.lastStoreID(), tokens: try views.tokens())
        set.logHead = views.logHead
        return set
    }
}
