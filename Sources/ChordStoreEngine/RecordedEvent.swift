public import ChordStoreDomain

/// An event as the log stores it: the event plus its envelope.
public struct RecordedEvent: Sendable, Hashable {
    /// The global sequence number, 1, 2, 3, ... with no gap.
    public var sequence: UInt64
    /// The leadership epoch that wrote it.
    public var epoch: UInt64
    /// The commit time.
    public var timestamp: Instant
    /// The session (actor) whose command caused it.
    public var session: String
    /// The command id the client supplied (empty if it gave none).
    public var commandID: String
    /// The event.
    public var event: Event
    /// The hash-chain checksum stored with the record.
    public var checksum: UInt64

    /// Creates a recorded event.
    public init(
        sequence: UInt64, epoch: UInt64, timestamp: Instant, session: String, commandID: String,
        event: Event, checksum: UInt64
    ) {
        self.sequence = sequence
        self.epoch = epoch
        self.timestamp = timestamp
        self.session = session
        self.commandID = commandID
        self.event = event
        self.checksum = checksum
    }
}

/// Who issued a command and under which id.
public struct CommandContext: Sendable, Hashable {
    /// The session (actor) name; ``ChordStoreDomain/Limits/maxMetadataBytes`` at most.
    public var session: String
    /// The client's id for this command (empty when the client gave none).
    public var commandID: String

    /// Creates a context.
    public init(session: String = "local", commandID: String = "") {
        self.session = session
        self.commandID = commandID
    }
}
