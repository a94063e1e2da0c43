/// An event as the log stores it: the event plus its envelope.
public struct RecordedEvent: Sendable, Hashable {
    /// The event's number in its store: 1, 2, 3, ... with no gap within the store (for
    /// store `default`, in a log written before stores, also its place in the log).
    public var sequence: UInt64
    /// The store the event belongs to (0: `default`; also 0 on a store event, which
    /// belongs to no store and names the store it creates or deletes itself).
    public var store: UInt32 = 0
    /// The event's place in the whole log (every store's events in commit order): 1, 2,
    /// 3, ... with no gap. What replication, checksums and epochs count in.
    public var logSequence: UInt64
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
    /// Set on events written by undo and redo: the change they revert.
    public var mark: ChangeMark?
    /// The id of the token whose call made the event (empty: no token; see
    /// docs/SECURITY.md).
    public var tokenID: String = ""

    /// Creates a recorded event.
    public init(
        sequence: UInt64, epoch: UInt64, timestamp: Instant, session: String, commandID: String,
        event: Event, checksum: UInt64, mark: ChangeMark? = nil, store: UInt32 = 0, logSequence: UInt64? = nil,
        tokenID: String = ""
    ) {
        self.mark = mark
        self.tokenID = tokenID
        self.sequence = sequence
        self.store = store
        self.logSequence = logSequence ?? sequence
        self.epoch = epoch
        self.timestamp = timestamp
        self.session = session
        self.commandID = commandID
        self.event = event
        self.checksum = checksum
    }
}

extension RecordedEvent {
    /// What the undo stacks fold of this event.
    public var change: Change { Change(sequence: sequence, session: session, event: event, mark: mark) }
}

/// Who issued a command and under which id.
public struct CommandContext: Sendable, Hashable {
    /// The session (actor) name; ``ChordStoreDomain/Limits/maxMetadataBytes`` at most.
    public var session: String
    /// The client's id for this command (empty when the client gave none).
    public var commandID: String
    /// If set, the revision the command's item must be at, or it fails with `aborted`
    /// (see ``ChordStoreDomain/Decider/revision(for:state:changes:)``).
    public var expectedRevision: UInt64?
    /// The store the command changes (see ``ChordStoreDomain/StoreName``).
    public var store: String
    /// The id of the token the command's call showed, recorded with its event (empty:
    /// none, as with `--auth none` or a data directory opened directly).
    public var tokenID: String

    /// Creates a context.
    public init(
        session: String = "local", commandID: String = "", expectedRevision: UInt64? = nil,
        store: String = StoreName.default, tokenID: String = ""
    ) {
        self.store = store
        self.tokenID = tokenID
        self.session = session
        self.commandID = commandID
        self.expectedRevision = expectedRevision
    }
}
