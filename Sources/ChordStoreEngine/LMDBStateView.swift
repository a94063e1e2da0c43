import ChordStoreRecords
import ChordStoreDomain
import Foundation
import LMDB

/// The named databases of a store's two LMDB environments.
///
/// The **log environment** (the data directory's `data.mdb`) holds the log and is synced
/// at every commit: a durable commit writes the few pages of one append. The **views
/// environment** (`views/`) holds every projection; it is written in the same turn of the
/// writer, right after the log commits, through a writable map without fsync, and is
/// rebuilt from the log whenever it cannot be trusted (see ``ViewsMarker``).
///
/// A class: each store's view, made a few times per event, copies one reference, not
/// nineteen handles with their names.
final class StoreDatabases: Sendable {
    /// Log environment: sequence → event record (the log; append-only).
    let log: Database
    /// Log environment: "format" → the on-disk format; "epoch" → the node's epoch.
    let logMeta: Database
    /// chordset id → `Chordset` message without its index.
    let chordsets: Database
    /// chord id → chordset id + position (or the controls marker), for the chords whose ids
    /// are not derived from their chordset's (``DerivedChordIDs``).
    let chords: Database
    /// index → chordset id (the user order).
    let order: Database
    /// chordset id → index.
    let positions: Database
    /// creation time + id → nothing (the default list order).
    let created: Database
    /// command id → sequence of the event it was recorded as (for idempotent retries).
    let commands: Database
    /// "views" → the views' layout version; "controls" → `Chord`; "applied" → the last
    /// event folded into the views (``AppliedHead``).
    let meta: Database
    /// session key → ``SessionRecord``: the tops of its undo and redo stacks, the redo
    /// depth, its first and last event. Few keys, so a commit touches few pages.
    let sessions: Database
    /// sequence → ``SessionLink``: the stack entry below the event (if it was pushed on
    /// an undo or redo stack) and the session's previous and next events. Keyed by
    /// sequence, so new entries land at the right edge of the tree.
    let links: Database
    /// revision key → last (8) + last by another session (8) + last session (UTF-8).
    let revisions: Database
    /// chordset id + sequence → nothing: each chordset's history.
    let chordsetHistory: Database
    /// delete-all sequence + index → `Chordset` without index: what each delete-all removed.
    let graveyard: Database
    /// folded title + 0 + creation key → nothing (title order and title queries).
    let titles: Database
    /// store id (4 bytes big-endian) → ``StoreRecord`` (the registry of live stores; not
    /// prefixed, unlike every database above but the log's).
    let stores: Database
    /// store name → store id (live stores).
    let storeNames: Database
    /// token id → ``TokenRecord`` (live tokens; not prefixed).
    let tokens: Database
    /// sequence in the store → log position (8 bytes big-endian each): where each of the
    /// store's events is in the whole log.
    let storeLog: Database

    /// The names of the views environment's databases, in ``init(log:views:)``'s order.
    static let viewNames = [
        "chordsets", "chords", "order", "positions", "created", "commands", "meta", "sessions", "session-links",
        "revisions", "chordset-history", "graveyard", "titles", "stores", "store-names", "store-log", "tokens",
    ]

    /// Opens (creating) every database of both environments.
    convenience init(log logEnvironment: Environment, views: Environment) throws {
        try self.init(
            viewDatabases: Self.viewNames.map { try views.openDatabase($0) },
            log: logEnvironment.openDatabase("log"), logMeta: logEnvironment.openDatabase("meta"))
    }

    /// Opens the existing databases of a read-only views environment alone
    /// (``ViewsOnlyBackend``): `log` and `logMeta` name no database, and any use of them
    /// fails.
    convenience init(readOnlyViews views: Environment) throws {
        try self.init(viewDatabases: views.existingDatabases(Self.viewNames), log: .unopened, logMeta: .unopened)
    }

    /// The views' databases in ``viewNames``' order, and the log's.
    private init(viewDatabases opened: [Database], log: Database, logMeta: Database) {
        (self.log, self.logMeta) = (log, logMeta)
        (chordsets, chords, order, positions, created, commands, meta) =
            (opened[0], opened[1], opened[2], opened[3], opened[4], opened[5], opened[6])
        (sessions, links, revisions, chordsetHistory, graveyard, titles) =
            (opened[7], opened[8], opened[9], opened[10], opened[11], opened[12])
        (stores, storeNames, storeLog, tokens) = (opened[13], opened[14], opened[15], opened[16])
    }

    /// The databases that hold chordsets and chords (emptied by delete-all).
    var chordsetViews: [Database] { [chordsets, chords, order, positions, created, titles] }
    /// Every database that holds a store's views under its prefix: emptied when the store
    /// is deleted.
    var storeViews: [Database] { chordsetViews + [commands, sessions, links, revisions, chordsetHistory, graveyard, storeLog, meta] }
    /// Every database derived from the log, emptied and reloaded by a rebuild.
    var views: [Database] { storeViews + [stores, storeNames, tokens] }

    static let viewsKey = Array("views".utf8)
    static let controlsKey = Array("controls".utf8)
    static let appliedKey = Array("applied".utf8)
    static let formatKey = Array("format".utf8)
    /// The node's leadership epoch (8 bytes big-endian), raised by promotion.
    static let epochKey = Array("epoch".utf8)
    /// The last epoch a `Fence` granted and to which leader: 8 bytes big-endian, then the
    /// leader's address in UTF-8 (from 2026-11-29; absent before: no grant known).
    static let epochGrantKey = Array("epoch-grant".utf8)
    /// The views' meta: the largest store id ever given (4 bytes big-endian).
    static let lastStoreKey = Array("last-store".utf8)
}

/// One store's projected state read and written through one transaction on each
/// environment: the fold's ``StateWriting`` over the store's part of the view databases
/// (``ScopedTransaction``), and the log beside them.
///
/// A snapshot opens its views transaction first, then its log transaction: the log always
/// holds every event the views reflect (commits write the log first), and may hold a few
/// more, which the views' store index leaves out.
struct LMDBStateView: StoreSnapshot, StateWriting {
    /// The views environment's transaction, scoped to the store.
    let scoped: ScopedTransaction
    /// The log environment's transaction; `nil` over views alone (``ViewsOnlyBackend``),
    /// where reading the log fails (``logTransaction``).
    let logTxn: Transaction?
    let dbs: StoreDatabases
    /// The store, as the registry had it when the view was made.
    let record: StoreRecord
    /// The store-wide revisions a write transaction holds until its end: every view an
    /// ``LMDBStoreSpace`` makes reads through them (in a read transaction they are
    /// empty); `nil` for a view made alone, which reads the database.
    let pending: PendingRevisions?

    /// `isLastStore`: whether no store with a larger id has views (a writer's view of it
    /// then appends its new last keys; see ``ScopedTransaction/putAtEnd(_:key:value:)``).
    init(
        txn: Transaction, logTxn: Transaction?, dbs: StoreDatabases, store: StoreRecord,
        isLastStore: Bool = false, pending: PendingRevisions? = nil
    ) {
        self.scoped = ScopedTransaction(txn, store: store.id, isLastStore: isLastStore)
        self.logTxn = logTxn
        self.dbs = dbs
        self.record = store
        self.pending = pending
    }

    func headChecksum() throws -> UInt64 {
        try logSequence(of: record.head)
            .flatMap { try logTransaction.get(dbs.log, key: KeyBytes.sequence($0)) }.flatMap(RecordCodec.storedChecksum) ?? 0
    }

    /// The log's transaction, or the refusal of a store that has none yet.
    var logTransaction: Transaction {
        get throws(ChordStoreError) {
            guard let logTxn else { throw ViewsOnlyBackend.logArriving }
            return logTxn
        }
    }

    func chordset(_ id: UUID) throws -> Chordset? {
        let key = KeyBytes.id(id)
        guard let record = try scoped.get(dbs.chordsets, key: key),
              let index = try scoped.get(dbs.positions, key: key) else { return nil }
        var chordset = try WireCodec.readChordset(record)
        chordset.index = try StoreKeys.index(index)
        return chordset
    }

    /// The stored record, which has no index: no decoding, no encoding, no copy.
    func withChordsetRecord(_ id: UUID, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        guard let record = try scoped.get(dbs.chordsets, key: KeyBytes.id(id)) else { return false }
        try body(record)
        return true
    }

    /// The stored record with the index added: no decoding, no encoding.
    func chordsetMessage(_ id: UUID) throws -> [UInt8]? {
        let key = KeyBytes.id(id)
        guard let record = try scoped.get(dbs.chordsets, key: key),
              let index = try scoped.get(dbs.positions, key: key) else { return nil }
        return WireCodec.chordsetMessage(record: record, index: try StoreKeys.index(index))
    }

    /// A chord whose id is derived from its chordset's (``DerivedChordIDs``) has no entry
    /// in the chord index: the chordset it names is read and its chords scanned.
    func chordLocation(_ id: UUID) throws -> ChordLocation? {
        if let owner = DerivedChordIDs.owner(of: id), let record = try scoped.get(dbs.chordsets, key: KeyBytes.id(owner)),
           let chord = try WireCodec.readChordset(record).chords.first(where: { $0.id == id }) {
            return .chordset(owner, position: chord.position)
        }
        return try scoped.get(dbs.chords, key: KeyBytes.id(id)).flatMap(StoreKeys.location)
    }

    /// One seek in the chord index (the controls chord's entry included): the eight
    /// derived ids are adjacent keys, the chordset's id with 1 to 8 in its last nibble.
    func holdsChordID(derivedFrom chordset: UUID) throws -> Bool {
        let first = KeyBytes.id(DerivedChordIDs.chordID(of: chordset, position: 0))
        let last = KeyBytes.id(DerivedChordIDs.chordID(of: chordset, position: Chordset.chordCount - 1))
        return try scoped.withCursor(dbs.chords) { cursor in
            guard let entry = try first.withUnsafeBytes({ try cursor.seek(atLeast: $0) }) else { return false }
            return last.withUnsafeBytes { last in entry.key.count == last.count && memcmp(entry.key.baseAddress!, last.baseAddress!, last.count) <= 0 }
        }
    }

    func controlsChord() throws -> Chord? {
        guard let bytes = try scoped.get(dbs.meta, key: StoreDatabases.controlsKey) else { return nil }
        return try WireCodec.readChord(bytes)
    }

    /// The user order holds indexes 0..<n: the last one tells the count.
    func chordsetCount() throws -> Int {
        try scoped.withCursor(dbs.order) { cursor in try cursor.last().map { try StoreKeys.index($0.key) + 1 } ?? 0 }
    }
    /// 8 per chordset, and the controls chord (verify counts the chord index itself).
    func chordCount() throws -> Int { try chordsetCount() * Chordset.chordCount + (try controlsChord() == nil ? 0 : 1) }

    func chordsetID(atIndex index: Int) throws -> UUID? {
        guard index >= 0, index <= UInt32.max else { return nil }
        return try scoped.get(dbs.order, key: KeyBytes.index(index)).map { try StoreKeys.checkedID($0) }
    }

    func scan(
        _ order: ChordsetOrder, descending: Bool, after cursor: [UInt8]?, from start: [UInt8]?,
        _ body: (UnsafeRawBufferPointer, UUID) throws -> Bool
    ) throws {
        let db: Database = switch order {
        case .creationDate: dbs.created
        case .title: dbs.titles
        case .index: dbs.order
        }
        func id(_ entry: Cursor.Entry) throws -> UUID {
            switch order {
            case .creationDate: try StoreKeys.idInCreationKey(entry.key)
            case .title: try StoreKeys.idInTitleKey(entry.key)
            case .index: try StoreKeys.checkedID(entry.value)
            }
        }
        try scoped.withCursor(db) { c in
            var entry: Cursor.Entry?
            // Resume after the cursor, unless the start key lies beyond it.
            var resume = cursor
            if let cursor, let start, descending ? start.lexicographicallyPrecedes(cursor) : cursor.lexicographicallyPrecedes(start) {
                resume = nil
            }
            if let bound = resume ?? start, !bound.isEmpty {
                let found = try bound.withUnsafeBytes { try c.seek(atLeast: $0) }
                if descending {
                    entry = found == nil ? try c.last() : try c.previous()
                } else if let found, resume != nil, found.key.elementsEqual(bound) {
                    entry = try c.next()
                } else {
                    entry = found
                }
            } else {
                entry = descending ? try c.last() : try c.first()
            }
            while let current = entry {
                guard try body(current.key, try id(current)) else { return }
                entry = descending ? try c.previous() : try c.next()
            }
        }
    }

    func sequence(forCommand commandID: String) throws -> UInt64? {
        try scoped.get(dbs.commands, key: Array(commandID.utf8)).map { try StoreKeys.sequence($0) }
    }

    func commandCount() throws -> Int { try scoped.count(dbs.commands) }
    func indexedChordCount() throws -> Int { try scoped.count(dbs.chords) }

    /// The store's records from `sequence` on, each checked (``RecordCodec/checkStoreRecord(_:sequence:store:logSequence:previousChecksum:)``).
    func forEachChainedRecord(from sequence: UInt64, _ body: (UInt64, UnsafeRawBufferPointer, UInt64) throws -> Bool) throws {
        try scoped.withCursor(dbs.storeLog) { cursor in
            var entry = try StoreKeys.sequence(max(sequence, 1)).withUnsafeBytes { try cursor.seek(atLeast: $0) }
            var previous: (logSequence: UInt64, checksum: UInt64)?
            while let current = entry {
                let log = try logTransaction  // views alone have none: a read of nothing needs none
                let sequence = try StoreKeys.sequence(current.key)
                let logSequence = try StoreKeys.sequence(current.value)
                guard let record = try log.get(dbs.log, key: KeyBytes.sequence(logSequence)) else {
                    throw Self.missing(logSequence, storeEvent: sequence, of: self.record.name)
                }
                let seed: UInt64
                if logSequence == 1 {
                    seed = 0
                } else if let previous, previous.logSequence == logSequence - 1 {
                    seed = previous.checksum
                } else {
                    guard let before = try log.get(dbs.log, key: KeyBytes.sequence(logSequence - 1)) else {
                        throw Self.missing(logSequence - 1, storeEvent: nil, of: self.record.name)
                    }
                    guard let checksum = RecordCodec.storedChecksum(before) else {
                        throw ChordStoreError(.dataLoss, "log event \(logSequence - 1) is damaged: it does not end with its checksum field")
                    }
                    seed = checksum
                }
                try RecordCodec.checkStoreRecord(record, sequence: sequence, store: self.record.id, logSequence: logSequence, previousChecksum: seed)
                previous = (logSequence, RecordCodec.storedChecksum(record) ?? 0)
                guard try body(sequence, record, seed) else { return }
                entry = try cursor.next()
            }
        }
    }

    private static func missing(_ logSequence: UInt64, storeEvent: UInt64?, of store: String) -> ChordStoreError {
        let whose = storeEvent.map { " (event \($0) of store \(store))" } ?? " (before an event of store \(store))"
        return ChordStoreError(.dataLoss, "log event \(logSequence) is missing\(whose): the log is damaged; run chordstore verify")
    }

    /// Where the store's event `sequence` is in the whole log.
    func logSequence(of sequence: UInt64) throws -> UInt64? {
        try scoped.get(dbs.storeLog, key: KeyBytes.sequence(sequence)).map { try StoreKeys.sequence($0) }
    }

    /// The store's event `sequence`, decoded.
    func recordedEvent(_ sequence: UInt64) throws -> RecordedEvent? {
        guard let logSequence = try logSequence(of: sequence),
              let record = try logTransaction.get(dbs.log, key: KeyBytes.sequence(logSequence)) else { return nil }
        return try RecordCodec.decode(record, sequence: sequence, store: self.record.id, logSequence: logSequence)
    }

    // MARK: StateWriting

    mutating func insertChordset(_ chordset: Chordset) throws {
        let count = try chordsetCount()
        let index = min(chordset.index, count)
        if index < count {
            for i in stride(from: count - 1, through: index, by: -1) { try moveOrderEntry(from: i, to: i + 1) }
            try scoped.put(dbs.order, key: KeyBytes.index(index), value: KeyBytes.id(chordset.id))
        } else {
            try scoped.putAtEnd(dbs.order, key: KeyBytes.index(index), value: KeyBytes.id(chordset.id))
        }
        let key = KeyBytes.id(chordset.id)
        // A time-ordered id (the writer's, or a client's version 7) is likely the largest
        // yet; a random one is not worth the try.
        if chordset.id.isTimeOrdered {
            try scoped.putAtEnd(dbs.positions, key: key, value: KeyBytes.index(index))
            try scoped.putAtEnd(dbs.chordsets, key: key, value: WireCodec.chordsetRecord(chordset))
        } else {
            try scoped.put(dbs.positions, key: key, value: KeyBytes.index(index))
            try scoped.put(dbs.chordsets, key: key, value: WireCodec.chordsetRecord(chordset))
        }
        try scoped.putAtEnd(dbs.created, key: KeyBytes.creation(chordset.creationDate, chordset.id), value: [UInt8]())
        try scoped.put(dbs.titles, key: StoreKeys.title(chordset), value: [UInt8]())
        for chord in chordset.chords where !DerivedChordIDs.isDerived(chord.id, of: chordset.id) {
            try scoped.put(dbs.chords, key: KeyBytes.id(chord.id), value: StoreKeys.location(.chordset(chordset.id, position: chord.position)))
        }
    }

    /// Replaces the record; the title must be unchanged (titles change through
    /// ``retitleChordset(_:to:)``, which keeps the title index).
    mutating func replaceChordset(_ chordset: Chordset) throws {
        try putRecord(chordset)
    }

    mutating func retitleChordset(_ id: UUID, to title: String) throws -> Bool {
        guard var chordset = try chordset(id) else { return false }
        _ = try scoped.delete(dbs.titles, key: StoreKeys.title(chordset))
        chordset.title = title
        try scoped.put(dbs.titles, key: StoreKeys.title(chordset), value: [UInt8]())
        try putRecord(chordset)
        return true
    }

    mutating func removeChordset(_ chordset: Chordset) throws {
        let key = KeyBytes.id(chordset.id)
        guard let indexBytes = try scoped.get(dbs.positions, key: key) else { return }
        let index = try StoreKeys.index(indexBytes)
        let count = try chordsetCount()
        try scoped.delete(dbs.chordsets, key: key)
        try scoped.delete(dbs.positions, key: key)
        try scoped.delete(dbs.created, key: KeyBytes.creation(chordset.creationDate, chordset.id))
        try scoped.delete(dbs.titles, key: StoreKeys.title(chordset))
        for chord in chordset.chords where !DerivedChordIDs.isDerived(chord.id, of: chordset.id) {
            try scoped.delete(dbs.chords, key: KeyBytes.id(chord.id))
        }
        for i in (index + 1)..<max(count, index + 1) { try moveOrderEntry(from: i, to: i - 1) }
        try scoped.delete(dbs.order, key: KeyBytes.index(count - 1))
    }

    mutating func moveChordset(_ id: UUID, from: Int, to: Int) throws {
        guard from != to else { return }
        if from < to {
            for i in (from + 1)...to { try moveOrderEntry(from: i, to: i - 1) }
        } else {
            for i in stride(from: from - 1, through: to, by: -1) { try moveOrderEntry(from: i, to: i + 1) }
        }
        try scoped.put(dbs.order, key: KeyBytes.index(to), value: KeyBytes.id(id))
        try scoped.put(dbs.positions, key: KeyBytes.id(id), value: KeyBytes.index(to))
    }

    mutating func setControlsChord(_ chord: Chord?) throws {
        if let previous = try controlsChord() {
            try scoped.delete(dbs.chords, key: KeyBytes.id(previous.id))
        }
        guard let chord else {
            try scoped.delete(dbs.meta, key: StoreDatabases.controlsKey)
            return
        }
        try scoped.put(dbs.meta, key: StoreDatabases.controlsKey, value: WireCodec.chordRecord(chord))
        try scoped.put(dbs.chords, key: KeyBytes.id(chord.id), value: StoreKeys.location(.controls))
    }

    mutating func removeAllChordsets(deletedAt sequence: UInt64) throws -> [UUID] {
        var removed: [UUID] = []
        try scoped.withCursor(dbs.order) { cursor in
            var entry = try cursor.first()
            while let current = entry {
                let index = try StoreKeys.index(current.key)
                let id = try StoreKeys.checkedID(current.value)
                guard let record = try scoped.get(dbs.chordsets, key: KeyBytes.id(id)) else {
                    throw ChordStoreError(.dataLoss, "the order names chordset \(id), which has no record")
                }
                try scoped.put(dbs.graveyard, key: StoreKeys.sequence(sequence) + StoreKeys.index(index), value: Array(record))
                removed.append(id)
                entry = try cursor.next()
            }
        }
        for db in dbs.chordsetViews { try scoped.empty(db) }
        if let controls = try controlsChord() {
            try scoped.put(dbs.chords, key: KeyBytes.id(controls.id), value: StoreKeys.location(.controls))
        }
        return removed
    }

    mutating func restoreChordsets(deletedAt sequence: UInt64) throws -> [UUID] {
        let chordsets = try deletedChordsets(at: sequence) ?? []
        for chordset in chordsets { try insertChordset(chordset) }
        return chordsets.map(\.id)
    }

    func deletedChordsets(at sequence: UInt64) throws -> [Chordset]? {
        let prefix = StoreKeys.sequence(sequence)
        var result: [Chordset] = []
        try scoped.withCursor(dbs.graveyard) { cursor in
            var entry = try prefix.withUnsafeBytes { try cursor.seek(atLeast: $0) }
            while let current = entry, current.key.count == 12, current.key.starts(with: prefix) {
                var chordset = try WireCodec.readChordset(current.value)
                chordset.index = try StoreKeys.index(UnsafeRawBufferPointer(rebasing: current.key[8...]))
                result.append(chordset)
                entry = try cursor.next()
            }
        }
        if result.isEmpty {
            guard case .allDeleted? = try recordedEvent(sequence)?.event else { return nil }
        }
        return result
    }

    /// Moves the chordset at user-order index `from` to `to` (overwriting what was there).
    private func moveOrderEntry(from: Int, to: Int) throws {
        guard let idBytes = try scoped.get(dbs.order, key: KeyBytes.index(from)) else {
            throw ChordStoreError(.dataLoss, "the user order has no chordset at index \(from)")
        }
        let id = Array(idBytes)
        try scoped.put(dbs.order, key: KeyBytes.index(to), value: id)
        try scoped.put(dbs.positions, key: id, value: KeyBytes.index(to))
    }

    private func putRecord(_ chordset: Chordset) throws {
        try scoped.put(dbs.chordsets, key: KeyBytes.id(chordset.id), value: WireCodec.chordsetRecord(chordset))
    }
}

extension LMDBStateView: LogAppending {
    func event(forCommand commandID: String) throws -> RecordedEvent? {
        guard let sequence = try sequence(forCommand: commandID) else { return nil }
        return try recordedEvent(sequence)
    }

    /// Notes the event in the store's index and its command id (the record itself goes to
    /// the log through ``LMDBStoreSpace/appendRecord(_:_:)``).
    mutating func append(_ sequence: UInt64, logSequence: UInt64, _ record: [UInt8], commandID: String) throws {
        try scoped.putAtEnd(dbs.storeLog, key: KeyBytes.sequence(sequence), value: KeyBytes.sequence(logSequence))
        if !commandID.isEmpty {
            try scoped.put(dbs.commands, key: Array(commandID.utf8), value: KeyBytes.sequence(sequence))
        }
    }
}
