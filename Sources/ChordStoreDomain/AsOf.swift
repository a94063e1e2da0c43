/// A point in the log's past.
public enum AsOf: Sendable, Hashable {
    /// Just after the event with this sequence number (0: before the first event).
    case sequence(UInt64)
    /// Just after the last event committed at or before this time.
    case time(Instant)
}
