/// How an event written by undo or redo relates to the change it reverts.
public enum ChangeMark: Sendable, Hashable {
    /// The event reverts the change recorded at this sequence number (an undo).
    case undoes(UInt64)
    /// The event reverts the undo event recorded at this sequence number (a redo).
    case redoes(UInt64)
}
