public import Foundation

/// How an event written by undo or redo relates to the change it reverts.
public enum ChangeMark: Sendable, Hashable {
    /// The event reverts the change recorded at this sequence number (an undo).
    case undoes(UInt64)
    /// The event reverts the undo event recorded at this sequence number (a redo).
    case redoes(UInt64)
}

/// An event with the envelope fields undo tracking folds: where it is in the log, which
/// session caused it, and whether it was written by undo or redo.
public struct Change: Sendable, Hashable {
    /// The event's sequence number.
    public var sequence: UInt64
    /// The session (actor) whose command caused it.
    public var session: String
    /// The event.
    public var event: Event
    /// Set on events written by undo and redo.
    public var mark: ChangeMark?

    /// Creates a change.
    public init(sequence: UInt64, session: String, event: Event, mark: ChangeMark?) {
        self.sequence = sequence
        self.session = session
        self.event = event
        self.mark = mark
    }
}

/// What a revision counts the changes of.
public enum RevisionKey: Sendable, Hashable {
    /// One chordset: its adds, deletes, renames, moves and chord edits.
    case chordset(UUID)
    /// The controls chord.
    case controls
    /// The collection: every change to any chordset, delete-all included.
    case collection
    /// Delete-all and its undo, which change every chordset at once.
    case bulk
}

/// The revision of one ``RevisionKey``: the last change to it, and the last change by
/// any *other* session than the last one. That is enough to answer "did a session other
/// than S change this after event N?" in O(1), which is the undo conflict rule.
public struct Revision: Sendable, Hashable {
    /// The sequence number of the last change.
    public var last: UInt64
    /// The session of the last change.
    public var lastSession: String
    /// The last change by a session other than `lastSession` (0: none).
    public var lastByOther: UInt64

    /// Creates a revision.
    public init(last: UInt64, lastSession: String, lastByOther: UInt64) {
        self.last = last
        self.lastSession = lastSession
        self.lastByOther = lastByOther
    }

    /// The revision after `session` changes the item at `sequence`.
    public func advanced(to sequence: UInt64, by session: String) -> Revision {
        if session == lastSession {
            return Revision(last: sequence, lastSession: session, lastByOther: lastByOther)
        }
        return Revision(last: sequence, lastSession: session, lastByOther: last)
    }

    /// The last change made by a session other than `session` (0: none).
    public func lastChange(notBy session: String) -> UInt64 {
        session == lastSession ? lastByOther : last
    }
}

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
    /// Notes that event `sequence` is part of the chordset's history.
    mutating func noteHistory(chordset: UUID, _ sequence: UInt64) throws
    /// Notes that event `sequence` is part of the session's history.
    mutating func noteHistory(session: String, _ sequence: UInt64) throws
}

/// Read access to logged changes by sequence number (the decider reads the event it
/// reverts).
public protocol ChangeLogReading {
    /// The change recorded at `sequence`, or `nil` past the end of the log.
    func change(at sequence: UInt64) throws -> Change?
}

/// How a change updates the undo and redo stacks, the revisions and the histories; the
/// counterpart of ``Fold`` for what the envelope says.
public enum ChangeFold {
    /// Applies `change`. `chordsets` are the chordsets the event touched (as ``Fold``
    /// returns them), whose histories it joins.
    public static func apply(_ change: Change, chordsets: [UUID], to changes: inout some ChangeWriting) throws {
        let session = change.session
        switch change.mark {
        case nil:
            try changes.pushUndo(session, change.sequence)
            try changes.clearRedo(session)
        case .undoes(let target):
            try changes.popUndo(session, target)
            try changes.pushRedo(session, change.sequence)
        case .redoes(let target):
            try changes.popRedo(session, target)
            try changes.pushUndo(session, change.sequence)
        }
        for key in change.event.revisionKeys {
            let revision = try changes.revision(key)?.advanced(to: change.sequence, by: session)
                ?? Revision(last: change.sequence, lastSession: session, lastByOther: 0)
            try changes.setRevision(key, revision)
        }
        try changes.noteHistory(session: session, change.sequence)
        for id in chordsets { try changes.noteHistory(chordset: id, change.sequence) }
    }
}
