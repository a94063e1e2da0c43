import ChordStoreDomain
import Foundation
import LMDB

/// Writes a whole state into empty view databases, each in key order with `MDB_APPEND`:
/// the fast half of a rebuild (LMDB fills pages sequentially instead of splitting them).
struct ViewLoader {
    let txn: Transaction
    let dbs: StoreDatabases

    func load(_ state: InMemoryState) throws {
        let ids = state.chordsetIDsInOrder
        for (index, id) in ids.enumerated() {
            try txn.put(dbs.order, key: StoreKeys.index(index), value: StoreKeys.id(id), flags: .append)
        }

        var chordsets: [Chordset] = []
        chordsets.reserveCapacity(ids.count)
        for id in ids {
            guard let chordset = state.chordset(id) else { continue }
            chordsets.append(chordset)
        }
        chordsets.sort { StoreKeys.sortKey($0.id) < StoreKeys.sortKey($1.id) }
        for chordset in chordsets {
            let key = StoreKeys.id(chordset.id)
            try txn.put(dbs.chordsets, key: key, value: WireCodec.chordsetRecord(chordset), flags: .append)
            try txn.put(dbs.positions, key: key, value: StoreKeys.index(chordset.index), flags: .append)
        }

        var chords: [(key: (UInt64, UInt64), id: UUID, location: ChordLocation)] = []
        chords.reserveCapacity(chordsets.count * Chordset.chordCount + 1)
        for chordset in chordsets {
            for chord in chordset.chords {
                chords.append((StoreKeys.sortKey(chord.id), chord.id, .chordset(chordset.id, position: chord.position)))
            }
        }
        if let controls = state.controlsChord() {
            chords.append((StoreKeys.sortKey(controls.id), controls.id, .controls))
            try txn.put(dbs.meta, key: StoreDatabases.controlsKey, value: WireCodec.chordRecord(controls))
        }
        chords.sort { $0.key < $1.key }
        for chord in chords {
            try txn.put(dbs.chords, key: StoreKeys.id(chord.id), value: StoreKeys.location(chord.location), flags: .append)
        }

        let created = chordsets.map { StoreKeys.creation($0.creationDate, $0.id) }.sorted { $0.lexicographicallyPrecedes($1) }
        for key in created {
            try txn.put(dbs.created, key: key, value: [UInt8](), flags: .append)
        }
    }
}
