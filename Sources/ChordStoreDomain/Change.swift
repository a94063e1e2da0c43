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
