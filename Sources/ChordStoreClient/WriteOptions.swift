public import ChordStoreDomain

/// How a command is sent: under which session and command id, checked against which
/// revision, how durable, within what time. The defaults suit an app: the server's
/// session for the connection, a fresh command id (so a retry after a lost answer
/// applies once), no revision check, the server's durability, no deadline.
public struct WriteOptions: Sendable, Hashable {
    /// The session (actor) the change is recorded under, whose undo and redo walk it
    /// (`nil`: the connection's default, `connection-<address>:<port>`).
    public var session: String?
    /// The command's id (`nil`: a fresh one). Sending a command again with the same id
    /// applies it once and answers with the first event.
    public var commandID: String?
    /// Refuse the change with `ABORTED` (reason `REVISION_MISMATCH`) unless its item is
    /// at this revision (docs/PROTOCOL.md §5).
    public var expectedRevision: UInt64?
    /// How durable the write must be before it is acknowledged (`nil`: the server's
    /// `--durability`).
    public var durability: Durability?
    /// How long the call may take (`nil`: no deadline).
    public var timeout: Duration?

    /// Options; all default.
    public init(
        session: String? = nil, commandID: String? = nil, expectedRevision: UInt64? = nil, durability: Durability? = nil,
        timeout: Duration? = nil
    ) {
        self.session = session
        self.commandID = commandID
        self.expectedRevision = expectedRevision
        self.durability = durability
        self.timeout = timeout
    }
}
