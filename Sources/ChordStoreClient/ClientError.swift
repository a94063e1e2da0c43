public import ChordStoreDomain
public import ChordStoreProto
import ChordStoreWire

/// A call's failure: the server's status (deadlines are enforced by the server), or a
/// local one: `UNAVAILABLE` when the connection is lost, `CANCELLED` when the calling
/// task is cancelled.
public struct ClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The status code.
    public var code: StatusCode
    /// Why, for a machine: the server's reason, or the client's own (``ErrorReason``).
    public var reason: ErrorReason
    /// What went wrong.
    public var message: String
    /// With `ABORTED` for an expected-revision mismatch: the item's revision now.
    public var currentRevision: UInt64?
    /// With `FAILED_PRECONDITION` for a write sent to a follower: the leader's HOST:PORT.
    public var leader: String?
    /// Whether the server answered with this status (`false`: the client's own verdict,
    /// such as a lost connection or a deadline it gave up at). A server that answers
    /// `UNAVAILABLE` is reachable; one the client could not reach is not.
    public var isServerReply: Bool

    /// Creates an error of the client's own; `reason` defaults to the code's name.
    public init(_ code: StatusCode, _ message: String, reason: ErrorReason? = nil, currentRevision: UInt64? = nil, leader: String? = nil) {
        self.code = code
        self.reason = reason ?? ErrorReason(code)
        self.message = message
        self.currentRevision = currentRevision
        self.leader = leader
        self.isServerReply = false
    }

    /// The error a failed call's status reports. A status without a reason comes from a
    /// server older than reasons: its reason is read from its words
    /// (``ChordStoreDomain/ErrorReason/ofOlderServer(code:message:)``), or is its code's name.
    @_spi(Raw) public init(_ status: Chordstore_V1_Status) {
        let code = StatusCode(rawValue: status.code) ?? .unknown
        self.init(
            code, status.message,
            reason: status.reason.isEmpty ? ErrorReason.ofOlderServer(code: code, message: status.message) : ErrorReason(rawValue: status.reason),
            currentRevision: status.code == StatusCode.aborted.rawValue ? status.currentRevision : nil,
            leader: status.leader.isEmpty ? nil : status.leader)
        isServerReply = true
    }

    public var description: String { "\(code): \(message)" }
}
