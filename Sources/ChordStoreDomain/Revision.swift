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

    /// The revision after `session` changes the item at `sequence`, given its revision
    /// before (`nil`: it never changed).
    public static func advancing(_ revision: Revision?, to sequence: UInt64, by session: String) -> Revision {
        revision?.advanced(to: sequence, by: session) ?? Revision(last: sequence, lastSession: session, lastByOther: 0)
    }

    /// The last change made by a session other than `session` (0: none).
    public func lastChange(notBy session: String) -> UInt64 {
        session == lastSession ? lastByOther : last
    }
}
