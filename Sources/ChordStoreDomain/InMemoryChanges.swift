public import Foundation

/// The undo and redo stacks, revisions and histories as plain Swift values: what a
/// replay of the log produces, and the storage of the in-memory engine.
public struct InMemoryChanges: ChangeWriting, Sendable, Hashable {
    /// Each session's undo stack, oldest first.
    public private(set) var undo: [String: [UInt64]] = [:]
    /// Each session's redo stack, oldest first.
    public private(set) var redo: [String: [UInt64]] = [:]
    /// The revision of every key that ever changed (built at each call: for loading and
    /// comparing, not for the fold).
    public var revisions: [RevisionKey: Revision] {
        var all = Dictionary(uniqueKeysWithValues: chordsetTable.lazy.compactMap { entry in
            entry.value.revision.map { (RevisionKey.chordset(entry.key.id), $0) }
        })
        all[.controls] = controlsRevision
        all[.collection] = collectionRevision
        all[.bulk] = bulkRevision
        return all
    }
    /// A chordset's revision and history, kept in one entry: an event of a chordset
    /// changes both, and its second look-up finds the entry in the cache (two tables took
    /// two look-ups, each a likely cache miss: a fifth of the samples of a replay's
    /// changes thread).
    package struct ChordsetChanges: Sendable, Hashable {
        /// The chordset's revision (`nil`: none was set or advanced).
        package var revision: Revision?
        /// The chordset's events, in order.
        package var history: [UInt64] = []
    }

    /// Each chordset's revision and history. Every entry has a revision or a non-empty
    /// history (nothing stores a `nil` revision, and an empty history is never added):
    /// equality and hashing, which compare this table, then agree with ``revisions`` and
    /// ``chordsetHistory``. The three other revision keys, one of which nearly every event
    /// advances, are fields of their own (no hashing).
    package private(set) var chordsetTable: [IDKey: ChordsetChanges] = [:]
    /// The chordsets' revisions by id (built at each call).
    public var chordsetRevisions: [UUID: Revision] {
        Dictionary(uniqueKeysWithValues: chordsetTable.lazy.compactMap { entry in entry.value.revision.map { (entry.key.id, $0) } })
    }
    private var controlsRevision: Revision?
    private var collectionRevision: Revision?
    private var bulkRevision: Revision?
    /// The events of each chordset that has any, in order, by id (built at each call).
    public var chordsetHistory: [UUID: [UInt64]] {
        Dictionary(uniqueKeysWithValues: chordsetTable.lazy.filter { !$0.value.history.isEmpty }.map { ($0.key.id, $0.value.history) })
    }
    /// How many chordsets have a revision.
    package var chordsetRevisionCount: Int { chordsetTable.values.count { $0.revision != nil } }
    /// The events of each session, in order.
    public private(set) var sessionHistory: [String: [UInt64]] = [:]

    /// Empty, as before the first event.
    public init() {}

    /// The stacks, revisions and histories of a saved view, as they were.
    public init(
        undo: [String: [UInt64]], redo: [String: [UInt64]], revisions: [RevisionKey: Revision],
        chordsetHistory: [UUID: [UInt64]], sessionHistory: [String: [UInt64]]
    ) {
        self.undo = undo
        self.redo = redo
        for (key, revision) in revisions { setRevision(key, revision) }
        for (id, history) in chordsetHistory where !history.isEmpty { chordsetTable[IDKey(id), default: ChordsetChanges()].history = history }
        self.sessionHistory = sessionHistory
    }

    /// Sets the sessions' undo and redo stacks and histories of a saved state, as they
    /// were (a load; its revisions and chordsets' histories come through
    /// ``setRevision(_:_:)`` and ``noteHistory(chordset:contentsOf:)``, keyed as the fold
    /// keys them, without a table by `UUID` to rekey).
    package mutating func setSessions(undo: [String: [UInt64]], redo: [String: [UInt64]], sessionHistory: [String: [UInt64]]) {
        self.undo = undo
        self.redo = redo
        self.sessionHistory = sessionHistory
    }

    /// Makes room for the revisions and histories of `chordsets` chordsets, so that a
    /// replay of a long log does not spend its time regrowing hash tables.
    public mutating func reserveCapacity(chordsets: Int) {
        chordsetTable.reserveCapacity(chordsets)
    }

    public func undoTop(_ session: String) -> UInt64? { undo[session]?.last }
    public func redoTop(_ session: String) -> UInt64? { redo[session]?.last }
    public func redoDepth(_ session: String, atMost limit: Int) -> Int { min(redo[session]?.count ?? 0, limit) }
    public func revision(_ key: RevisionKey) -> Revision? {
        switch key {
        case .chordset(let id): chordsetTable[IDKey(id)]?.revision
        case .controls: controlsRevision
        case .collection: collectionRevision
        case .bulk: bulkRevision
        }
    }

    public mutating func pushUndo(_ session: String, _ sequence: UInt64) { undo[session, default: []].append(sequence) }
    public mutating func popUndo(_ session: String, _ sequence: UInt64) { Self.remove(sequence, from: &undo, session) }
    public mutating func pushRedo(_ session: String, _ sequence: UInt64) { redo[session, default: []].append(sequence) }
    public mutating func popRedo(_ session: String, _ sequence: UInt64) { Self.remove(sequence, from: &redo, session) }
    public mutating func clearRedo(_ session: String) {
        if !redo.isEmpty { redo[session] = nil }  // no lookup while no session can redo (most logs never undo)
    }
    public mutating func setRevision(_ key: RevisionKey, _ revision: Revision) {
        switch key {
        case .chordset(let id): chordsetTable[IDKey(id), default: ChordsetChanges()].revision = revision
        case .controls: controlsRevision = revision
        case .collection: collectionRevision = revision
        case .bulk: bulkRevision = revision
        }
    }
    public mutating func advanceRevision(_ key: RevisionKey, to sequence: UInt64, by session: String) {
        switch key {
        case .chordset(let id): Self.advance(&chordsetTable[IDKey(id), default: ChordsetChanges()].revision, to: sequence, by: session)  // one lookup, found or not
        case .controls: Self.advance(&controlsRevision, to: sequence, by: session)
        case .collection: Self.advance(&collectionRevision, to: sequence, by: session)
        case .bulk: Self.advance(&bulkRevision, to: sequence, by: session)
        }
    }
    public mutating func noteHistory(chordset: UUID, _ sequence: UInt64) {
        chordsetTable[IDKey(chordset), default: ChordsetChanges()].history.append(sequence)
    }
    /// Appends `sequences` to the chordset's history (a saved state's load, which reads a
    /// long history in parts); the first part is kept as it is, not copied.
    package mutating func noteHistory(chordset: UUID, contentsOf sequences: [UInt64]) {
        guard !sequences.isEmpty else { return }
        let key = IDKey(chordset)
        if let index = chordsetTable.index(forKey: key) {
            if chordsetTable.values[index].history.isEmpty {
                chordsetTable.values[index].history = sequences
            } else {
                chordsetTable.values[index].history.append(contentsOf: sequences)
            }
        } else {
            chordsetTable[key] = ChordsetChanges(history: sequences)
        }
    }
    public mutating func noteHistory(session: String, _ sequence: UInt64) { sessionHistory[session, default: []].append(sequence) }

    private static func advance(_ revision: inout Revision?, to sequence: UInt64, by session: String) {
        revision = Revision.advancing(revision, to: sequence, by: session)
    }

    private static func remove(_ sequence: UInt64, from stacks: inout [String: [UInt64]], _ session: String) {
        guard var stack = stacks[session], let at = stack.lastIndex(of: sequence) else { return }
        stack.remove(at: at)
        stacks[session] = stack.isEmpty ? nil : stack
    }
}

extension InMemoryChanges {
    /// ``ChangeFold/apply(_:chordsets:to:)`` for plain values, which cannot fail.
    public mutating func apply(_ change: Change, chordsets: [UUID]) {
        apply(change, touched: .listed(chordsets))
    }

    /// ``ChangeFold/apply(_:touched:to:)`` for plain values, which cannot fail.
    public mutating func apply(_ change: Change, touched: TouchedChordsets) {
        do {
            try ChangeFold.apply(change, touched: touched, to: &self)
        } catch {
            preconditionFailure("InMemoryChanges does not throw: \(error)")
        }
    }
}

extension InMemoryChanges {
    /// A sentence naming the first part that differs from `other`, or `nil` when equal.
    public func firstDifference(from other: InMemoryChanges) -> String? {
        if undo != other.undo { return "undo stacks: \(Self.differing(undo, other.undo))" }
        if redo != other.redo { return "redo stacks: \(Self.differing(redo, other.redo))" }
        let (mine, theirs) = (revisions, other.revisions)  // each built once
        if mine != theirs {
            let key = Set(mine.keys).union(theirs.keys).first { mine[$0] != theirs[$0] }
            return "revision of \(key.map { "\($0)" } ?? "?"): \(key.flatMap { mine[$0] }.map { "\($0)" } ?? "none") vs \(key.flatMap { theirs[$0] }.map { "\($0)" } ?? "none")"
        }
        let (histories, others) = (chordsetHistory, other.chordsetHistory)
        if histories != others { return "chordset histories: \(Self.differing(histories, others))" }
        if sessionHistory != other.sessionHistory { return "session histories: \(Self.differing(sessionHistory, other.sessionHistory))" }
        return nil
    }

    private static func differing<Key: Hashable>(_ mine: [Key: [UInt64]], _ theirs: [Key: [UInt64]]) -> String {
        guard let key = Set(mine.keys).union(theirs.keys).first(where: { mine[$0] != theirs[$0] }) else { return "?" }
        return "\(key): \(mine[key] ?? []) vs \(theirs[key] ?? [])"
    }
}
