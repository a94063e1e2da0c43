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
struct StoreDatabases: Sendable {
    /// Log environment: sequence → event record (the log; append-only).
    var log: Database
    /// Log environment: "format" → the on-disk format; "epoch" → the node's epoch.
    var logMeta: Database
    /// chordset id → `Chordset` message without its index.
    var chordsets: Database
    /// chord id → chordset id + position (or the controls marker).
    var chords: Database
    /// index → chordset id (the user order).
    var order: Database
    /// chordset id → index.
    var positions: Database
    /// creation time + id → nothing (the default list order).
    var created: Database
    /// command id → sequence of the event it was recorded as (for idempotent retries).
    var commands: Database
    /// "views" → the views' layout version; "controls" → `Chord`; "applied" → the last
    /// event folded into the views (``AppliedHead``).
    var meta: Database
    /// session key → ``SessionRecord``: the tops of its undo and redo stacks, the redo
    /// depth, its first and last event. Few keys, so a commit touches few pages.
    var sessions: Database
    /// sequence → ``SessionLink``: the stack entry below the event (if it was pushed on
    /// an undo or redo stack) and the session's previous and next events. Keyed by
    /// sequence, so new entries land at the right edge of the tree.
    var links: Database
    /// revision key → last (8) + last by another session (8) + last session (UTF-8).
    var revisions: Database
    /// chordset id + sequence → nothing: each chordset's history.
    var chordsetHistory: Database
    /// delete-all sequence + index → `Chordset` without index: what each delete-all removed.
    var graveyard: Database
    /// folded title + 0 + creation key → nothing (title order and title queries).
    var titles: Database

    /// The names of the views environment's databases, in ``init(log:views:)``'s order.
    static let viewNames = [
        "chordsets", "chords", "order", "positions", "created", "commands", "meta", "sessions", "session-links",
        "revisions", "chordset-history", "graveyard", "titles",
    ]

    /// Opens (creating) every database of both environments.
    init(log logEnvironment: Environment, views: Environment) throws {
        log = try logEnvironment.openDatabase("log")
        logMeta = try logEnvironment.openDatabase("meta")
        let opened = try Self.viewNames.map { try views.openDatabase($0) }
        (chordsets, chords, order, positions, created, commands, meta) =
            (opened[0], opened[1], opened[2], opened[3], opened[4], opened[5], opened[6])
        (sessions, links, revisions, chordsetHistory, graveyard, titles) =
            (opened[7], opened[8], opened[9], opened[10], opened[11], opened[12])
    }

    /// The databases that hold chordsets and chords (emptied by delete-all).
    var chordsetViews: [Database] { [chordsets, chords, order, positions, created, titles] }
    /// Every database derived from the log, emptied and reloaded by a rebuild.
    var views: [Database] { chordsetViews + [commands, sessions, links, revisions, chordsetHistory, graveyard] }

    static let viewsKey = Array("views".utf8)
    static let controlsKey = Array("controls".utf8)
    static let appliedKey = Array("applied".utf8)
    static let formatKey = Array("format".utf8)
    /// The node's leadership epoch (8 bytes big-endian), raised by promotion.
    static let epochKey = Array("epoch".utf8)
}

/// The projected state read and written through one transaction on each environment: the
/// fold's ``StateWriting`` over the view databases, and the log beside them.
///
/// A snapshot opens its views transaction first, then its log transaction: the log always
/// holds every event the views reflect (commits write the log first), and may hold a few
/// more, which ``head`` (the views' applied event) leaves out.
struct LMDBStateView: StoreSnapshot, StateWriting {
    /// The views environment's transaction.
    let txn: Transaction
    /// The log environment's transaction.
    let logTxn: Transaction
    let dbs: StoreDatabases

    var head: LogHead {
        get throws { try AppliedHead.read(txn, dbs) }
    }

    func chordset(_ id: UUID) throws -> Chordset? {
        let key = StoreKeys.id(id)
        guard let record = try txn.get(dbs.chordsets, key: key),
              let index = try txn.get(dbs.positions, key: key) else { return nil }
        var chordset = try WireCodec.readChordset(record)
        chordset.index = try StoreKeys.index(index)
        return chordset
    }

    /// The stored record with the index added: no decoding, no encoding.
    func chordsetMessage(_ id: UUID) throws -> [UInt8]? {
        let key = StoreKeys.id(id)
        guard let record = try txn.get(dbs.chordsets, key: key),
              let index = try txn.get(dbs.positions, key: key) else { return nil }
        return WireCodec.chordsetMessage(record: record, index: try StoreKeys.index(index))
    }

    func chordLocation(_ id: UUID) throws -> ChordLocation? {
        try txn.get(dbs.chords, key: StoreKeys.id(id)).flatMap(StoreKeys.location)
    }

    func controlsChord() throws -> Chord? {
        guard let bytes = try txn.get(dbs.meta, key: StoreDatabases.controlsKey) else { return nil }
        return try WireCodec.readChord(bytes)
    }

    func chordsetCount() throws -> Int { try txn.stat(dbs.chordsets).entries }
    func chordCount() throws -> Int { try txn.stat(dbs.chords).entries }

    func chordsetID(atIndex index: Int) throws -> UUID? {
        guard index >= 0, index <= UInt32.max else { return nil }
        return try txn.get(dbs.order, key: StoreKeys.index(index)).map { try StoreKeys.checkedID($0) }
    }

    func chordsets(order: ChordsetOrder, limit: Int?) throws -> [Chordset] {
        let cap = limit ?? Int.max
        var result: [Chordset] = []
        switch order {
        case .creationDate:
            try txn.withCursor(dbs.created) { cursor in
                var entry = try cursor.first()
                while let current = entry, result.count < cap {
                    result.append(try indexed(StoreKeys.idInCreationKey(current.key), in: "created"))
                    entry = try cursor.next()
                }
            }
        case .index:
            try txn.withCursor(dbs.order) { cursor in
                var entry = try cursor.first()
                while let current = entry, result.count < cap {
                    result.append(try indexed(StoreKeys.checkedID(current.value), in: "order"))
                    entry = try cursor.next()
                }
            }
        case .title:
            try txn.withCursor(dbs.titles) { cursor in
                var entry = try cursor.first()
                while let current = entry, result.count < cap {
                    result.append(try indexed(StoreKeys.idInTitleKey(current.key), in: "titles"))
                    entry = try cursor.next()
                }
            }
        }
        return result
    }

    /// The chordset an index entry names; a dangling entry is damage, not something to skip.
    private func indexed(_ id: UUID, in index: String) throws -> Chordset {
        guard let chordset = try chordset(id) else {
            throw ChordStoreError(.dataLoss, "the \(index) index names chordset \(id), which has no record")
        }
        return chordset
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
        try txn.withCursor(db) { c in
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
        try txn.get(dbs.commands, key: Array(commandID.utf8)).map { try StoreKeys.sequence($0) }
    }

    func commandCount() throws -> Int { try txn.stat(dbs.commands).entries }

    func forEachRecord(from sequence: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        let last = try head.sequence  // the log may hold a few events the views do not yet
        try logTxn.withCursor(dbs.log) { cursor in
            var entry = try StoreKeys.sequence(max(sequence, 1)).withUnsafeBytes { try cursor.seek(atLeast: $0) }
            while let current = entry {
                let sequence = try StoreKeys.sequence(current.key)
                guard sequence <= last, try body(sequence, current.value) else { return }
                entry = try cursor.next()
            }
        }
    }

    // MARK: StateWriting

    mutating func insertChordset(_ chordset: Chordset) throws {
        let count = try chordsetCount()
        let index = min(chordset.index, count)
        if index < count {
            for i in stride(from: count - 1, through: index, by: -1) { try moveOrderEntry(from: i, to: i + 1) }
            try txn.put(dbs.order, key: StoreKeys.index(index), value: StoreKeys.id(chordset.id))
        } else {
            try txn.put(dbs.order, key: StoreKeys.index(index), value: StoreKeys.id(chordset.id), flags: .append)
        }
        let key = StoreKeys.id(chordset.id)
        try txn.put(dbs.positions, key: key, value: StoreKeys.index(index))
        try putRecord(chordset)
        try txn.put(dbs.created, key: StoreKeys.creation(chordset.creationDate, chordset.id), value: [UInt8]())
        try txn.put(dbs.titles, key: StoreKeys.title(chordset), value: [UInt8]())
        for chord in chordset.chords {
            try txn.put(dbs.chords, key: StoreKeys.id(chord.id), value: StoreKeys.location(.chordset(chordset.id, position: chord.position)))
        }
    }

    /// Replaces the record; the title must be unchanged (titles change through
    /// ``retitleChordset(_:to:)``, which keeps the title index).
    mutating func replaceChordset(_ chordset: Chordset) throws {
        try putRecord(chordset)
    }

    mutating func retitleChordset(_ id: UUID, to title: String) throws -> Bool {
        guard var chordset = try chordset(id) else { return false }
        _ = try txn.delete(dbs.titles, key: StoreKeys.title(chordset))
        chordset.title = title
        try txn.put(dbs.titles, key: StoreKeys.title(chordset), value: [UInt8]())
        try putRecord(chordset)
        return true
    }

    mutating func removeChordset(_ chordset: Chordset) throws {
        let key = StoreKeys.id(chordset.id)
        guard let indexBytes = try txn.get(dbs.positions, key: key) else { return }
        let index = try StoreKeys.index(indexBytes)
        let count = try chordsetCount()
        try txn.delete(dbs.chordsets, key: key)
        try txn.delete(dbs.positions, key: key)
        try txn.delete(dbs.created, key: StoreKeys.creation(chordset.creationDate, chordset.id))
        try txn.delete(dbs.titles, key: StoreKeys.title(chordset))
        for chord in chordset.chords { try txn.delete(dbs.chords, key: StoreKeys.id(chord.id)) }
        for i in (index + 1)..<max(count, index + 1) { try moveOrderEntry(from: i, to: i - 1) }
        try txn.delete(dbs.order, key: StoreKeys.index(count - 1))
    }

    mutating func moveChordset(_ id: UUID, from: Int, to: Int) throws {
        guard from != to else { return }
        if from < to {
            for i in (from + 1)...to { try moveOrderEntry(from: i, to: i - 1) }
        } else {
            for i in stride(from: from - 1, through: to, by: -1) { try moveOrderEntry(from: i, to: i + 1) }
        }
        try txn.put(dbs.order, key: StoreKeys.index(to), value: StoreKeys.id(id))
        try txn.put(dbs.positions, key: StoreKeys.id(id), value: StoreKeys.index(to))
    }

    mutating func setControlsChord(_ chord: Chord?) throws {
        if let previous = try controlsChord() {
            try txn.delete(dbs.chords, key: StoreKeys.id(previous.id))
        }
        guard let chord else {
            try txn.delete(dbs.meta, key: StoreDatabases.controlsKey)
            return
        }
        try txn.put(dbs.meta, key: StoreDatabases.controlsKey, value: WireCodec.chordRecord(chord))
        try txn.put(dbs.chords, key: StoreKeys.id(chord.id), value: StoreKeys.location(.controls))
    }

    mutating func removeAllChordsets(deletedAt sequence: UInt64) throws -> [UUID] {
        var removed: [UUID] = []
        try txn.withCursor(dbs.order) { cursor in
            var entry = try cursor.first()
            while let current = entry {
                let index = try StoreKeys.index(current.key)
                let id = try StoreKeys.checkedID(current.value)
                guard let record = try txn.get(dbs.chordsets, key: StoreKeys.id(id)) else {
                    throw ChordStoreError(.dataLoss, "the order names chordset \(id), which has no record")
                }
                try txn.put(dbs.graveyard, key: StoreKeys.sequence(sequence) + StoreKeys.index(index), value: Array(record))
                removed.append(id)
                entry = try cursor.next()
            }
        }
        for db in dbs.chordsetViews { try txn.empty(db) }
        if let controls = try controlsChord() {
            try txn.put(dbs.chords, key: StoreKeys.id(controls.id), value: StoreKeys.location(.controls))
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
        try txn.withCursor(dbs.graveyard) { cursor in
            var entry = try prefix.withUnsafeBytes { try cursor.seek(atLeast: $0) }
            while let current = entry, current.key.count == 12, current.key.starts(with: prefix) {
                var chordset = try WireCodec.readChordset(current.value)
                chordset.index = try StoreKeys.index(UnsafeRawBufferPointer(rebasing: current.key[8...]))
                result.append(chordset)
                entry = try cursor.next()
            }
        }
        if result.isEmpty {
            guard let record = try logTxn.get(dbs.log, key: prefix),
                  case .allDeleted = try RecordCodec.decode(record, sequence: sequence).event else { return nil }
        }
        return result
    }

    /// Moves the chordset at user-order index `from` to `to` (overwriting what was there).
    private func moveOrderEntry(from: Int, to: Int) throws {
        guard let idBytes = try txn.get(dbs.order, key: StoreKeys.index(from)) else {
            throw ChordStoreError(.dataLoss, "the user order has no chordset at index \(from)")
        }
        let id = Array(idBytes)
        try txn.put(dbs.order, key: StoreKeys.index(to), value: id)
        try txn.put(dbs.positions, key: id, value: StoreKeys.index(to))
    }

    private func putRecord(_ chordset: Chordset) throws {
        try txn.put(dbs.chordsets, key: StoreKeys.id(chordset.id), value: WireCodec.chordsetRecord(chordset))
    }
}

/// The log of a commit: records go to the log environment's transaction, command ids
/// to the views'.
struct LMDBLog: LogAppending {
    let view: LMDBStateView
    /// Whether `append` stores the record; `false` when the log already holds it and only
    /// the views take it (catching them up).
    var storesRecords = true

    func change(at sequence: UInt64) throws -> Change? {
        try view.change(at: sequence)
    }

    func event(forCommand commandID: String) throws -> RecordedEvent? {
        guard let sequence = try view.sequence(forCommand: commandID),
              let record = try view.logTxn.get(view.dbs.log, key: StoreKeys.sequence(sequence)) else { return nil }
        return try RecordCodec.decode(record, sequence: sequence)
    }

    mutating func append(_ sequence: UInt64, _ record: [UInt8], commandID: String) throws {
        if storesRecords {
            try view.logTxn.put(view.dbs.log, key: StoreKeys.sequence(sequence), value: record, flags: .append)
        }
        if !commandID.isEmpty {
            try view.txn.put(view.dbs.commands, key: Array(commandID.utf8), value: StoreKeys.sequence(sequence))
        }
    }
}
