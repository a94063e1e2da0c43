/// The limits a server enforces on what one client can make it allocate or hold.
public struct WireLimits: Sendable, Hashable {
    /// The default largest frame: 4 MiB.
    public static let defaultMaxFrameSize = 4 << 20

    /// Largest frame body accepted, in bytes; a larger length prefix closes the connection.
    public var maxFrameSize = defaultMaxFrameSize
    /// Calls in flight on one connection; more are refused with `RESOURCE_EXHAUSTED`.
    public var maxCallsPerConnection = 256
    /// Open connections; more are closed at once.
    public var maxConnections = 1_024
    /// Open connections from one IP address; more from it are closed at once. The last
    /// sixteenth of ``maxConnections`` goes only to addresses that hold no connection.
    public var maxConnectionsPerAddress = 256
    /// Time a new connection has to send its first complete frame before it is closed.
    public var handshakeTimeout: Duration = .seconds(10)
    /// Request bytes that partial frames larger than ``budgetedFrameSize`` may hold, over
    /// all connections: a larger frame that does not fit closes its connection with
    /// `RESOURCE_EXHAUSTED` as soon as its length prefix arrives.
    public var maxBufferedBytes = 256 << 20
    /// Frames up to this size are not counted against ``maxBufferedBytes`` (at most
    /// ``maxConnections`` × this).
    public static let budgetedFrameSize = 64 << 10
    /// A connection with no call in flight and nothing received for this long is closed.
    public var idleTimeout: Duration = .seconds(300)
    /// Time allowed from a frame's first byte to its last; a client that trickles bytes
    /// is cut off.
    public var frameTimeout: Duration = .seconds(10)
    /// Bytes a stream may have queued for a client that does not read before the stream
    /// ends with `RESOURCE_EXHAUSTED`.
    public var maxStreamBacklog = 4 << 20
    /// Longest a stream waits for a slow reader before ending with `RESOURCE_EXHAUSTED`.
    public var slowReaderTimeout: Duration = .seconds(5)
    /// Most chordsets one list call returns (about 610 bytes each: 5,000 stay well under
    /// the 4 MiB frame; a reply over the frame limit is refused with `RESOURCE_EXHAUSTED`).
    public var maxListSize = 5_000
    /// Most chordsets a live query (`WatchQuery`) follows: each commit diffs the window
    /// against the previous one, O(n²) at worst.
    public var maxLiveQuerySize = 1_000
    /// Most live queries (`WatchQuery`) a server runs at once, over all connections:
    /// each re-runs its query after commits.
    public var maxLiveQueries = 256
    /// Most live queries one token runs at once (over every connection and transport).
    public var maxLiveQueriesPerToken = 32
    /// Most live queries on one store at once, whoever runs them.
    public var maxLiveQueriesPerStore = 128
    /// Most server streams (`Subscribe`, `ReadLog`, `WatchQuery`) one token holds open.
    public var maxStreamsPerToken = 256
    /// Most server streams open on one store, whoever holds them.
    public var maxStreamsPerStore = 1_024
    /// Most connections of the framed port that have not yet shown a valid credential
    /// (`nil`: an eighth of ``maxConnections``, at least 1). A new connection past it
    /// closes the oldest of them, so strangers cannot hold the slots that clients with a
    /// token need.
    public var maxUnauthenticatedConnections: Int?
    /// Time a connection of the framed port has to make a call with a valid credential
    /// before it is closed (`Health` alone does not count).
    public var unauthenticatedTimeout: Duration = .seconds(10)

    /// Streams a client of the gRPC endpoint may reset (cancel) on one connection within
    /// 30 s; past it (and 200 more) the connection is closed with `GOAWAY
    /// ENHANCE_YOUR_CALM` (a "rapid reset" flood).
    public var maxStreamResets = 10_000

    /// ``maxUnauthenticatedConnections``, or its default.
    public var unauthenticatedConnections: Int { max(1, maxUnauthenticatedConnections ?? maxConnections / 8) }
    /// Least time between two delta messages of one live query: commits in between are
    /// folded into one message (reflecting the latest of them).
    public var liveQueryInterval: Duration = .milliseconds(20)

    /// The defaults.
    public init() {}
}
