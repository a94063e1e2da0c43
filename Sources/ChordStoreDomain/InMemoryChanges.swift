public import Foundation

/// The undo and redo stacks, revisions and histories as plain Swift values: what a
/// replay of the log produces, and the storage of the in-memory engine.
public struct InMemoryChanges: ChangeWriting, Sendable, Hashable {
    /// Each session's undo stack, oldest first.
    public private(set) var undo: [String: [UInt64]] = [:]
    /// Each session's redo stack, oldest first.
    public private(set) var redo: [String: [UInt64]] = [:]
    /// The revision of every key that ever changed.
    public private(set) var revisions: [RevisionKey: Revision] = [:]
    /// The events of each chordset, in order.
    public private(set) var chordsetHistory: [UUID: [UInt64]] = [:]
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
        self.revisions = revisions
        self.chordsetHistory = chordsetHistory
        self.sessionHistory = sessionHistory
    }

    public func undoTop(_ session: String) -> UInt64? { undo[session]?.last }
    public func redoTop(_ session: String) -> UInt64? { redo[session]?.last }
    public func redoDepth(_ session: String, atMost limit: Int) -> Int { min(redo[session]?.count ?? 0, limit) }
    public func revision(_ key: RevisionKey) -> Revision? { revisions[key] }

    public mutating func pushUndo(_ session: String, _ sequence: UInt64) { undo[session, default: []].append(sequence) }
    public mutating func popUndo(_ session: String, _ sequence: UInt64) { Self.remove(sequence, from: &undo, session) }
    public mutating func pushRedo(_ session: String, _ sequence: UInt64) { redo[session, default: []].append(sequence) }
    public mutating func popRedo(_ session: String, _ sequence: UInt64) { Self.remove(sequence, from: &redo, session) }
    public mutating func clearRedo(_ session: String) { redo[session] = nil }
    public mutating func setRevision(_ key: RevisionKey, _ revision: Revision) { revisions[key] = revision }
    public mutating func noteHistory(chordset: UUID, _ sequence: UInt64) { chordsetHistory[chordset, default: []].append(sequence) }
    public mutating func noteHistory(session: String, _ sequence: UInt64) { sessionHistory[session, default: []].append(sequence) }

    private static func remove(_ sequence: UInt64, from stacks: inout [String: [UInt64]], _ session: String) {
        guard var stack = stacks[session], let at = stack.lastIndex(of: sequence) else { return }
        stack.remove(at: at)
        stacks[session] = stack.isEmpty ? nil : stack
    }
}

extension InMemoryChanges {
    /// ``ChangeFold/apply(_:chordsets:to:)`` for plain values, which cannot fail.
    public mutating func apply(_ change: Change, chordsets: [UUID]) {
        do {
            try ChangeFold.apply(change, chordsets: chordsets, to: &self)
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
        if revisions != other.revisions {
            let key = Set(revisions.keys).union(other.revisions.keys).first { revisions[$0] != other.revisions[$0] }
            return "revision of \(key.map { "\($0)" } ?? "?"): \(key.flatMap { revisions[$0] }.map { "\($0)" } ?? "none") vs \(key.flatMap { other.revisions[$0] }.map { "\($0)" } ?? "none")"
        }
        if chordsetHistory != other.chordsetHistory { return "chordset histories: \(Self.differing(chordsetHistory, other.chordsetHistory))" }
        if sessionHistory != other.sessionHistory { return "session histories: \(Self.differing(sessionHistory, other.sessionHistory))" }
        return nil
    }

    private static func differing<Key: Hashable>(_ mine: [Key: [UInt64]], _ theirs: [Key: [UInt64]]) -> String {
        guard let key = Set(mine.keys).union(theirs.keys).first(where: { mine[$0] != theirs[$0] }) else { return "?" }
        return "\(key): \(mine[key] ?? []) vs \(theirs[key] ?? [])"
    }
}
