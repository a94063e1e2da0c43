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

    /// A store's chordsets' revisions and histories (``InMemoryChanges/chordsetTable``).
    typealias ChordsetTable = [IDKey: InMemoryChanges.ChordsetChanges]

    /// Loads every store of `replay` into empty views: each store's views in id order (so
    /// that `MDB_APPEND` holds across stores), the registry, the last id given and the
    /// live tokens.
    static func load(_ replay: StoreSet, txn: Transaction, dbs: StoreDatabases) throws {
        var space = LMDBStoreSpace(txn: txn, logTxn: txn, dbs: dbs, logHead: .empty, storesRecords: false)
        for store in replay.liveStores.sorted(by: { $0.record.id < $1.record.id }) {
            let loader = ViewLoader(txn: ScopedTransaction(txn, store: store.record.id), dbs: dbs)
            try loader.load(store.state, changes: store.changes, log: store.log)
            if store.record.id != 0 || store.record.head != 0 { try space.save(store.record) }
        }
        try space.flush()
        for token in replay.tokens.values { try space.saveToken(token) }
        if replay.lastID > 0 {
            try txn.put(dbs.meta, key: StoreDatabases.lastStoreKey, value: StoreRecord.prefix(replay.lastID))
        }
    }

    /// About how many bytes of map the views of `replay` take once loaded, from each
    /// database's entries (a leaf node is its key with the store's 4-byte prefix, its
    /// value and about 10 bytes), the sizes of chordset records and title keys sampled
    /// (live and deleted apart), plus a seventh for branch pages and partly filled pages,
    /// and 1 MiB. A rebuild grows the views' map to it at once: growing as the load fills
    /// the map undoes the load each time (a map of 32 MiB doubles six times, loading about
    /// twice the views in vain, for a million adds).
    static func estimatedBytes(_ replay: StoreSet) -> Int {
        let node = 4 + 10
        var total = 0
        for store in replay.liveStores {
            let (state, changes, log) = (store.state, store.changes, store.log)
            let count = state.chordsetCount()
            let ids = state.chordsetIDsInOrder
            let live = sampledBytes(stride(from: 0, to: ids.count, by: max(1, ids.count / 64)).compactMap { state.chordset(ids[$0]) })
            let graves = state.allDeletedChordsets.values
            let buried = graves.reduce(0) { $0 + $1.count }
            let deleted = sampledBytes(graves.flatMap { group in
                stride(from: 0, to: group.count, by: max(1, buried / 64)).map { group[$0] }
            })
            let events = log.logSequences.count
            let histories = changes.chordsetTable.values.reduce(0) { $0 + $1.history.count }
            let sessions = Set(changes.sessionHistory.keys).union(changes.undo.keys).union(changes.redo.keys)
            total += events * (8 + 8 + node) + events * (8 + 24 + node)  // the store's log index, the sessions' links
            total += count * (16 + live.record + node) + count * (live.titleKey + node)  // chordsets, titles
            total += count * ((16 + 4 + node) * 2 + 24 + node)  // positions, order, created
            total += state.indexedChordCount * (16 + 17 + node)  // the chord index (ids not derived, the controls chord)
            total += (changes.chordsetRevisionCount + 3) * (17 + 16 + 16 + node)
            total += histories * (24 + node)
            total += sessions.reduce(0) { $0 + 1 + $1.utf8.count + 40 + node }
            total += log.commandCount * (40 + 8 + node)
            total += buried * (12 + deleted.record + node)
        }
        return total + total / 7 + (1 << 20)
    }

    /// The mean bytes of the records and title keys of `sample` (zeros for none).
    private static func sampledBytes(_ sample: [Chordset]) -> (record: Int, titleKey: Int) {
        guard !sample.isEmpty else { return (0, 0) }
        let record = sample.reduce(0) { $0 + WireCodec.chordsetRecord($1).count }
        let titleKey = sample.reduce(0) { $0 + StoreKeys.title($1).count }
        return (record / sample.count, titleKey / sample.count)
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

        // The chordsets stay where they are; what is sorted (by id) is their keys and places.
        let chordsets = state.chordsetsInOrder()
        var byID = chordsets.indices.map { (key: StoreKeys.sortKey(chordsets[$0].id), at: $0) }
        byID.sort { $0.key < $1.key }
        var record = ProtoWriter(capacity: 1_024)
        try append(to: dbs.chordsets) { put in
            for (_, at) in byID {
                record.removeAll()
                WireCodec.write(&record, chordsets[at], withIndex: false)
                try withUnsafeBytes(of: chordsets[at].id.uuid) { key in try record.bytes.withUnsafeBytes { try put(key, $0) } }
            }
        }
        try append(to: dbs.positions) { put in
            for (_, at) in byID {
                try withUnsafeBytes(of: chordsets[at].id.uuid) { key in
                    try withUnsafeBytes(of: UInt32(chordsets[at].index).bigEndian) { try put(key, $0) }
                }
            }
        }

        // The chords whose ids are not derived from their chordset's (DerivedChordIDs): each
        // entry is its id as two integers (its key, big-endian, is the id's bytes), its
        // chordset's place in `chordsets` and its position, 24 bytes to sort rather than 56.
        let controlsPlace = UInt32.max
        var chords: [(key: (UInt64, UInt64), chordset: UInt32, position: UInt8)] = []
        chords.reserveCapacity(state.indexedChordCount)
        for (place, chordset) in chordsets.enumerated() {
            for chord in chordset.chords where !DerivedChordIDs.isDerived(chord.id, of: chordset.id) {
                chords.append((StoreKeys.sortKey(chord.id), UInt32(place), UInt8(chord.position)))
            }
        }
        if let controls = state.controlsChord() {
            chords.append((StoreKeys.sortKey(controls.id), controlsPlace, 0xFF))
            try txn.put(dbs.meta, key: StoreDatabases.controlsKey, value: WireCodec.chordRecord(controls))
        }
        chords.sort { $0.key < $1.key }
        let marker: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        try append(to: dbs.chords) { put in
            for chord in chords {
                let chordset = chord.chordset == controlsPlace ? marker : chordsets[Int(chord.chordset)].id.uuid
                try withUnsafeBytes(of: (chord.key.0.bigEndian, chord.key.1.bigEndian)) { key in
                    try withUnsafeBytes(of: (chordset, chord.position)) { try put(key, UnsafeRawBufferPointer(rebasing: $0.prefix(17))) }
                }
            }
        }

        var titles = chordsets.map(StoreKeys.title)
        titles.sort { Self.precedes($0, $1) }
        try append(to: dbs.titles) { put in
            for key in titles { try key.withUnsafeBytes { try put($0, UnsafeRawBufferPointer(start: nil, count: 0)) } }
        }

        var created = chordsets.map {
            (time: UInt64(bitPattern: $0.creationDate.microsecondsSince1970) ^ (1 << 63), key: StoreKeys.sortKey($0.id), id: $0.id)
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
        try appendSorted(records.map { (StoreKeys.session($0.key), $0.value.bytes.array) }, to: dbs.sessions)
        try append(to: dbs.links) { put in
            for sequence in links.indices where linked[sequence] {
                let link = links[sequence]
                try withUnsafeBytes(of: UInt64(sequence).bigEndian) { key in
                    try withUnsafeBytes(of: (link.below.bigEndian, link.previous.bigEndian, link.next.bigEndian)) { try put(key, $0) }
                }
            }
        }
        // The chordsets sorted once, for their revisions and their histories.
        let chordsets = changes.chordsetTable
        let byID = Self.byID(chordsets)
        try loadRevisions(changes, chordsets: chordsets, inOrder: byID)
        // Each chordset's sequences are already ascending: sort the chordsets only, by a
        // key computed once each, and without looking each up again.
        var key = [UInt8](repeating: 0, count: 24)
        try append(to: dbs.chordsetHistory) { put in
            for index in byID {
                withUnsafeBytes(of: chordsets.keys[index].id.uuid) { key.replaceSubrange(0..<16, with: $0) }
                for sequence in chordsets.values[index].history {
                    withUnsafeBytes(of: sequence.bigEndian) { key.replaceSubrange(16..<24, with: $0) }
                    try key.withUnsafeBytes { try put($0, UnsafeRawBufferPointer(start: nil, count: 0)) }
                }
            }
        }
    }


    /// The revisions: the chordsets' (keys 0 + id) from `chordsets` (``InMemoryChanges/chordsetTable``)
    /// in the order of their ids (`order`: ``byID(_:)`` of it), written from one buffer
    /// each for key and value (a million adds make a million), then the controls chord's,
    /// the collection's and delete-all's (keys 1, 2, 3).
    private func loadRevisions(_ changes: InMemoryChanges, chordsets: ChordsetTable, inOrder order: [ChordsetTable.Index]) throws {
        try append(to: dbs.revisions) { put in
            for index in order {
                guard let revision = chordsets.values[index].revision else { continue }
                try KeyBytes.revision(.chordset(chordsets.keys[index].id)).withViewBytes { key in
                    try StoreKeys.withRevision(revision) { try put(key, $0) }
                }
            }
            for shared in [RevisionKey.controls, .collection, .bulk] {
                guard let revision = changes.revision(shared) else { continue }
                try KeyBytes.revision(shared).withViewBytes { key in try StoreKeys.withRevision(revision) { try put(key, $0) } }
            }
        }
    }

    /// The positions of `dictionary`'s entries in the order of their ids' bytes (their keys
    /// in the views): what is sorted is each id as two integers and its position, not the
    /// entries.
    static func byID<Value>(_ dictionary: [IDKey: Value]) -> [Dictionary<IDKey, Value>.Index] {
        var order = dictionary.indices.map { (key: StoreKeys.sortKey(dictionary.keys[$0]), index: $0) }
        order.sort { $0.key < $1.key }
        return order.map(\.index)
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
