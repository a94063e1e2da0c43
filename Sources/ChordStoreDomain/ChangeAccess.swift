public import Foundation

/// The per-session undo and redo stacks and the revisions, as the decider reads them.
///
/// A session's undo stack holds the events whose effect is current and that it may
/// revert: its plain changes and its redos. Its redo stack holds its undo events, most
/// recent on top. Both are derived from the log by ``ChangeFold``.
public protocol ChangeReading {
    /// The event `session` would undo next, if any.
    func undoTop(_ session: String) throws -> UInt64?
    /// The undo event `session` would redo next, if any.
    func redoTop(_ session: String) throws -> UInt64?
    /// How many undone changes `session` can redo, counting at most to `limit`.
    func redoDepth(_ session: String, atMost limit: Int) throws -> Int
    /// The revision of `key`, or `nil` if it never changed.
    func revision(_ key: RevisionKey) throws -> Revision?
}

/// The mutations ``ChangeFold`` is written in.
public protocol ChangeWriting: ChangeReading {
    /// Pushes `sequence` on `session`'s undo stack.
    mutating func pushUndo(_ session: String, _ sequence: UInt64) throws
    /// Removes `sequence` from `session`'s undo stack.
    mutating func popUndo(_ session: String, _ sequence: UInt64) throws
    /// Pushes `sequence` on `session`'s redo stack.
    mutating func pushRedo(_ session: String, _ sequence: UInt64) throws
    /// Removes `sequence` from `session`'s redo stack.
    mutating func popRedo(_ session: String, _ sequence: UInt64) throws
    /// Empties `session`'s redo stack.
    mutating func clearRedo(_ session: String) throws
    /// Stores the revision of `key`.
    mutating func setRevision(_ key: RevisionKey, _ revision: Revision) throws
    /// Advances the revision of `key` to event `sequence` of `session` (creates it at
    /// `sequence` if it never changed): ``revision(_:)`` then ``setRevision(_:_:)``,
    /// which a store in memory does in one lookup.
    mutating func advanceRevision(_ key: RevisionKey, to sequence: UInt64, by session: String) throws
    /// Notes that event `sequence` is part of the chordset's history.
    mutating func noteHistory(chordset: UUID, _ sequence: UInt64) throws
    /// ``noteHistory(chordset:_:)`` for an event that added the chordset (new, or
    /// restored by an undo): usually its history's first key, and the largest yet where
    /// ids grow (a store whose history keys are ordered by chordset may append it).
    mutating func noteHistory(addedChordset: UUID, _ sequence: UInt64) throws
    /// Notes that event `sequence` is part of the session's history.
    mutating func noteHistory(session: String, _ sequence: UInt64) throws
    /// What event `sequence` of `session` does to the session's stacks and history, all
    /// at once: a new change (`mark` nil) is pushed on the undo stack and empties the redo
    /// stack; an undo pops its target from the undo stack and is pushed on the redo
    /// stack; a redo pops its target from the redo stack and is pushed on the undo stack;
    /// each joins the session's history. The default calls the steps one by one; a store
    /// that keeps one record per session does it in one read and one write of it.
    mutating func noteSessionChange(_ session: String, _ sequence: UInt64, mark: ChangeMark?) throws
}

extension ChangeWriting {
    /// The steps of a session's change one by one: the stack steps ``ChangeFold`` made
    /// before this method existed, then the history (what a store without a faster way
    /// does).
    public mutating func noteSessionChange(_ session: String, _ sequence: UInt64, mark: ChangeMark?) throws {
        switch mark {
        case nil:
            try pushUndo(session, sequence)
            try clearRedo(session)
        case .undoes(let target):
            try popUndo(session, target)
            try pushRedo(session, sequence)
        case .redoes(let target):
            try popRedo(session, target)
            try pushUndo(session, sequence)
        }
        try noteHistory(session: session, sequence)
    }

    /// ``noteHistory(chordset:_:)`` (what a store without a faster way does).
    public mutating func noteHistory(addedChordset: UUID, _ sequence: UInt64) throws {
        try noteHistory(chordset: addedChordset, sequence)
    }

    /// Reads the revision of `key`, then stores the next (what a store without a faster
    /// way does).
    public mutating func advanceRevision(_ key: RevisionKey, to sequence: UInt64, by session: String) throws {
        try setRevision(key, Revision.advancing(try revision(key), to: sequence, by: session))
    }
}

/// Read access to logged changes by sequence number (the decider reads the event it
/// reverts).
public protocol ChangeLogReading {
    /// The change recorded at `sequence`, or `nil` past the end of the log.
    func change(at sequence: UInt64) throws -> Change?
}
