import ChordStoreRecords
import ChordStoreDomain
import Foundation
import LMDB

/// Writes a whole state into empty view databases, each in key order through a cursor
/// with `MDB_APPEND`: the second half of a rebuild. LMDB then fills pages sequentially
/// instead of splitting them, and keys and values are built in place, without an
/// allocation per entry (a million-event log has about a million view entries).
struct ViewLoader {
    let txn: ScopedTransaction
    let dbs: StoreDatabases

    /// Loads every store of `replay` into empty views: each store's views in id order (so
    /// that `MDB_APPEND` holds across stores), the registry, the last id given and the
    /// live tokens.
    static func load(_ replay: StoreSet, txn: Transaction, dbs: StoreDatabases) throws {
        var space = LMDBStoreSpace(txn: txn, logTxn: txn, dbs: dbs, logHead: .empty, storesRecords: false)
        for store in replay.liveStores.sorted(by: { $0.record.id < $1.record.id }) {
            let loader = ViewLoader(txn: ScopedTransaction(txn, prefix: store.record.prefix), dbs: dbs)
            try loader.load(store.state, changes: store.changes, log: store.log)
            if store.record.id != 0 || store.record.head != 0 { try space.save(store.record) }
        }
        try space.flush()
        for token in replay.tokens.values { try space.saveToken(token) }
        if replay.lastID > 0 {
            try txn.put(dbs.meta, key: StoreDatabases.lastStoreKey, value: StoreRecord.prefix(replay.lastID))
        }
    }

    private func load(_ state: InMemoryState, changes: InMemoryChanges, log: InMemoryLog) throws {
        try append(to: dbs.storeLog) { put in
            for (offset, logSequence) in log.logSequences.enumerated() {
                try withUnsafeBytes(of: UInt64(offset + 1).bigEndian) { key in
                    try withUnsafeBytes(of: logSequence.bigEndian) { try put(key, $0) }
                }
            }
        }
        let commands = log.commands.map { (id: $0.key, sequence: $0.value) }
        try loadChanges(changes)
        var graveyard: [(key: [UInt8], value: [UInt8])] = []
        for (sequence, chordsets) in state.allDeletedChordsets {
            for chordset in chordsets {
                graveyard.append((StoreKeys.sequence(sequence) + StoreKeys.index(chordset.index), WireCodec.chordsetRecord(chordset)))
            }
        }
        try appendSorted(graveyard, to: dbs.graveyard)

        let ids = state.chordsetIDsInOrder
        try append(to: dbs.order) { put in
            for (index, id) in ids.enumerated() {
                try withUnsafeBytes(of: UInt32(index).bigEndian) { key in
                    try withUnsafeBytes(of: id.uuid) { try put(key, $0) }
                }
            }
        }

        var chordsets: [(key: (UInt64, UInt64), chordset: Chordset)] = []
        chordsets.reserveCapacity(ids.count)
        for id in ids {
            guard let chordset = state.chordset(id) else { continue }
            chordsets.append((StoreKeys.sortKey(id), chordset))
        }
        chordsets.sort { $0.key < $1.key }
        var record = ProtoWriter(capacity: 1_024)
        try append(to: dbs.chordsets) { put in
            for (_, chordset) in chordsets {
                record.removeAll()
                WireCodec.write(&record, chordset, withIndex: false)
                try withUnsafeBytes(of: chordset.id.uuid) { key in try record.bytes.withUnsafeBytes { try put(key, $0) } }
            }
        }
        try append(to: dbs.positions) { put in
            for (_, chordset) in chordsets {
                try withUnsafeBytes(of: chordset.id.uuid) { key in
                    try withUnsafeBytes(of: UInt32(chordset.index).bigEndian) { try put(key, $0) }
                }
            }
        }

        var chords: [(key: (UInt64, UInt64), id: UUID, location: (uuid_t, UInt8))] = []
        chords.reserveCapacity(chordsets.count * Chordset.chordCount + 1)
        for (_, chordset) in chordsets {
            for chord in chordset.chords {
                chords.append((StoreKeys.sortKey(chord.id), chord.id, (chordset.id.uuid, UInt8(chord.position))))
            }
        }
        if let controls = state.controlsChord() {
            let marker: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            chords.append((StoreKeys.sortKey(controls.id), controls.id, (marker, 0xFF)))
            try txn.put(dbs.meta, key: StoreDatabases.controlsKey, value: WireCodec.chordRecord(controls))
        }
        chords.sort { $0.key < $1.key }
        try append(to: dbs.chords) { put in
            for chord in chords {
                try withUnsafeBytes(of: chord.id.uuid) { key in
                    try withUnsafeBytes(of: chord.location) { try put(key, UnsafeRawBufferPointer(rebasing: $0.prefix(17))) }
                }
            }
        }

        var titles = chordsets.map { StoreKeys.title($0.chordset) }
        titles.sort { Self.precedes($0, $1) }
        try append(to: dbs.titles) { put in
            for key in titles { try key.withUnsafeBytes { try put($0, UnsafeRawBufferPointer(start: nil, count: 0)) } }
        }

        var created = chordsets.map {
            (time: UInt64(bitPattern: $0.chordset.creationDate.microsecondsSince1970) ^ (1 << 63), key: $0.key, id: $0.chordset.id)
        }
        created.sort { ($0.time, $0.key.0, $0.key.1) < ($1.time, $1.key.0, $1.key.1) }
        try append(to: dbs.created) { put in
            for entry in created {
                try withUnsafeBytes(of: (entry.time.bigEndian, entry.id.uuid)) { key in
                    try put(UnsafeRawBufferPointer(rebasing: key.prefix(24)), UnsafeRawBufferPointer(start: nil, count: 0))
                }
            }
        }

        // A later event with the same id (impossible through the engine) would win, as
        // it would have in the live index.
        var latest: [String: UInt64] = [:]
        latest.reserveCapacity(commands.count)
        for command in commands { latest[command.id] = command.sequence }
        let sortedCommands = latest.map { (key: Array($0.key.utf8), sequence: $0.value) }
            .sorted { Self.precedes($0.key, $1.key) }
        try append(to: dbs.commands) { put in
            for command in sortedCommands {
                try command.key.withUnsafeBytes { key in
                    try withUnsafeBytes(of: command.sequence.bigEndian) { try put(key, $0) }
                }
            }
        }
    }

    private func loadChanges(_ changes: InMemoryChanges) throws {
        // Session records and the links of their stacks and histories. The links are kept
        // by sequence in an array, not a dictionary: a store's sequences run from 1 to its
        // last, each in its session's history, so the array is dense and already in key
        // order (at a million events, hashing and sorting the keys were most of a rebuild).
        var records: [String: SessionRecord] = [:]
        let top = Int(max(
            changes.sessionHistory.values.reduce(0) { max($0, $1.last ?? 0) },
            changes.undo.values.reduce(0) { max($0, $1.max() ?? 0) },
            changes.redo.values.reduce(0) { max($0, $1.max() ?? 0) }))
        var links = [SessionLink](repeating: SessionLink(), count: top + 1)
        var linked = [Bool](repeating: false, count: top + 1)
        for (session, stack) in changes.undo {
            for (position, sequence) in stack.enumerated() {
                links[Int(sequence)].below = position == 0 ? 0 : stack[position - 1]
                linked[Int(sequence)] = true
            }
            records[session, default: SessionRecord()].undoTop = stack.last ?? 0
        }
        for (session, stack) in changes.redo {
            for (position, sequence) in stack.enumerated() {
                links[Int(sequence)].below = position == 0 ? 0 : stack[position - 1]
                linked[Int(sequence)] = true
            }
            records[session, default: SessionRecord()].redoTop = stack.last ?? 0
            records[session, default: SessionRecord()].redoDepth = UInt64(stack.count)
        }
        for (session, history) in changes.sessionHistory {
            for (position, sequence) in history.enumerated() {
                links[Int(sequence)].previous = position == 0 ? 0 : history[position - 1]
                links[Int(sequence)].next = position + 1 < history.count ? history[position + 1] : 0
                linked[Int(sequence)] = true
            }
            records[session, default: SessionRecord()].first = history.first ?? 0
            records[session, default: SessionRecord()].last = history.last ?? 0
        }
        try appendSorted(records.map { (StoreKeys.session($0.key), $0.value.bytes) }, to: dbs.sessions)
        try append(to: dbs.links) { put in
            for sequence in links.indices where linked[sequence] {
                let link = links[sequence]
                try withUnsafeBytes(of: UInt64(sequence).bigEndian) { key in
                    try withUnsafeBytes(of: (link.below.bigEndian, link.previous.bigEndian, link.next.bigEndian)) { try put(key, $0) }
                }
            }
        }
        try appendSorted(changes.revisions.map { (StoreKeys.revision($0.key), StoreKeys.revision($0.value)) }, to: dbs.revisions)
        // Each chordset's sequences are already ascending: sort the chordsets only, by a
        // key computed once each, and without looking each up again.
        let histories = changes.chordsetHistory.map { (key: StoreKeys.sortKey($0.key), id: $0.key, sequences: $0.value) }
            .sorted { $0.key < $1.key }
        var key = [UInt8](repeating: 0, count: 24)
        try append(to: dbs.chordsetHistory) { put in
            for (_, id, sequences) in histories {
                key.replaceSubrange(0..<16, with: StoreKeys.id(id))
                for sequence in sequences {
                    withUnsafeBytes(of: sequence.bigEndian) { key.replaceSubrange(16..<24, with: $0) }
                    try key.withUnsafeBytes { try put($0, UnsafeRawBufferPointer(start: nil, count: 0)) }
                }
            }
        }
    }


    /// Sorts `entries` by key and appends them (the change databases). What is sorted is
    /// each entry's first 24 key bytes as three integers and its index, not the arrays:
    /// ties (keys longer than that, or of different lengths) are broken by the whole key.
    private func appendSorted(_ entries: [(key: [UInt8], value: [UInt8])], to db: Database) throws {
        let order = entries.indices.map { (prefix: Self.prefix(entries[$0].key), index: $0) }.sorted { a, b in
            a.prefix != b.prefix ? a.prefix < b.prefix : Self.precedes(entries[a.index].key, entries[b.index].key)
        }
        try append(to: db) { put in
            for (_, index) in order {
                try entries[index].key.withUnsafeBytes { key in try entries[index].value.withUnsafeBytes { try put(key, $0) } }
            }
        }
    }

    /// The first 24 bytes of `key` (zeros past its end) as big-endian integers: they order
    /// as the bytes do.
    static func prefix(_ key: [UInt8]) -> (UInt64, UInt64, UInt64) {
        func word(_ start: Int) -> UInt64 {
            var value: UInt64 = 0
            for offset in start..<(start + 8) { value = value << 8 | UInt64(offset < key.count ? key[offset] : 0) }
            return value
        }
        return (word(0), word(8), word(16))
    }

    /// Whether key `a` sorts before key `b` in LMDB's default order: `memcmp` of their
    /// common length, then the shorter first (what `lexicographicallyPrecedes` gives,
    /// without its generic element-by-element loop).
    static func precedes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                let common = min(a.count, b.count)
                let order = common == 0 ? 0 : memcmp(a.baseAddress!, b.baseAddress!, common)
                return order != 0 ? order < 0 : a.count < b.count
            }
        }
    }

    /// Runs `body` with a function that appends one entry (keys must come in order).
    private func append(
        to db: Database,
        _ body: ((UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws {
        try txn.withCursor(db) { cursor in
            try body { key, value in try cursor.put(key: key, value: value, flags: .append) }
        }
    }
}
