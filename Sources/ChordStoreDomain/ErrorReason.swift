/// Why a call was refused, as a machine reads it: a stable upper-case name beside the
/// status code (as google.rpc.ErrorInfo's `reason`), carried by every error of the
/// server and sent on every transport (docs/PROTOCOL.md §3). Code branches on it,
/// never on a message's words: messages are for people and may be reworded.
///
/// A refusal with nothing more specific to say carries its code's name
/// (``init(_:)``: `INVALID_ARGUMENT`, `DATA_LOSS`, …).
///
/// ```swift
/// catch let error as ClientError where error.reason == .notLeader { … }
/// ```
public struct ErrorReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The name, as sent on the wire.
    public var rawValue: String
    /// The reason named `rawValue`.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The reason of a refusal that gives none more specific than its code.
    public init(_ code: StatusCode) { self.init(rawValue: code.description) }

    /// The name.
    public var description: String { rawValue }

    // MARK: Where to send the call

    /// A write or a replication stream sent to a member that does not lead; the status's
    /// `leader` names the one that does (empty: none known now, retry shortly).
    public static let notLeader = ErrorReason(rawValue: "NOT_LEADER")
    /// Two members' logs differ at the position a replication batch or stream starts
    /// from (the follower parks its divergent suffix).
    public static let diverged = ErrorReason(rawValue: "DIVERGED")
    /// A replication batch of a leader whose epoch is older than the member's.
    public static let olderLeader = ErrorReason(rawValue: "OLDER_LEADER")
    /// A new follower still receiving its copy of the leader's log: what needs the log
    /// is not served yet.
    public static let stillReceivingLog = ErrorReason(rawValue: "STILL_RECEIVING_LOG")

    // MARK: Credentials

    /// The call showed no credential and needs one.
    public static let tokenRequired = ErrorReason(rawValue: "TOKEN_REQUIRED")
    /// The token is unknown, revoked or mistyped, or its header is malformed.
    public static let tokenInvalid = ErrorReason(rawValue: "TOKEN_INVALID")
    /// The call's token was revoked while the call ran.
    public static let tokenRevoked = ErrorReason(rawValue: "TOKEN_REVOKED")
    /// The client kept its token from this server (it was limited to others).
    public static let tokenWithheld = ErrorReason(rawValue: "TOKEN_WITHHELD")
    /// The cluster secret is not this cluster's, or the server accepts no member.
    public static let clusterSecretInvalid = ErrorReason(rawValue: "CLUSTER_SECRET_INVALID")
    /// Too many failed authentications from this address: the connection is closed.
    public static let tooManyFailedAuthentications = ErrorReason(rawValue: "TOO_MANY_FAILED_AUTHENTICATIONS")
    /// No call of the connection showed a valid credential in time.
    public static let noCredentialInTime = ErrorReason(rawValue: "NO_CREDENTIAL_IN_TIME")

    // MARK: Permissions

    /// The token works on another store.
    public static let otherStore = ErrorReason(rawValue: "OTHER_STORE")
    /// The token is read-only.
    public static let readOnlyToken = ErrorReason(rawValue: "READ_ONLY_TOKEN")
    /// The call needs an admin token.
    public static let adminOnly = ErrorReason(rawValue: "ADMIN_ONLY")
    /// Only cluster members (the cluster secret) may make the call.
    public static let membersOnly = ErrorReason(rawValue: "MEMBERS_ONLY")
    /// The cluster secret is for the cluster's calls only.
    public static let secretNotForData = ErrorReason(rawValue: "SECRET_NOT_FOR_DATA")
    /// A web page of another origin, or a name of another site (HTTP endpoint).
    public static let otherOrigin = ErrorReason(rawValue: "OTHER_ORIGIN")

    // MARK: What the call names

    /// No store has the name.
    public static let storeNotFound = ErrorReason(rawValue: "STORE_NOT_FOUND")
    /// No chordset has the id.
    public static let chordsetNotFound = ErrorReason(rawValue: "CHORDSET_NOT_FOUND")
    /// No chord has the id.
    public static let chordNotFound = ErrorReason(rawValue: "CHORD_NOT_FOUND")
    /// No live token has the id.
    public static let tokenNotFound = ErrorReason(rawValue: "TOKEN_NOT_FOUND")
    /// The id is in use already.
    public static let idInUse = ErrorReason(rawValue: "ID_IN_USE")
    /// The item is not at the revision the command expected (`current_revision` says
    /// where it is).
    public static let revisionMismatch = ErrorReason(rawValue: "REVISION_MISMATCH")
    /// The session has nothing to undo.
    public static let nothingToUndo = ErrorReason(rawValue: "NOTHING_TO_UNDO")
    /// The session has nothing to redo.
    public static let nothingToRedo = ErrorReason(rawValue: "NOTHING_TO_REDO")

    // MARK: Limits and the server's state

    /// The disk, or a map at `--map-size-max`, is full: commands are refused, reads go on.
    /// (Other limits of the server are `RESOURCE_EXHAUSTED` with the code's name.)
    public static let diskFull = ErrorReason(rawValue: "DISK_FULL")
    /// A frame was larger than the server's `--max-frame-size`: the connection closes
    /// with a `GoAway` naming the limit, and the call in that frame is refused (the same
    /// request never fits: a device replica takes such a write aside as rejected).
    public static let frameTooLarge = ErrorReason(rawValue: "FRAME_TOO_LARGE")
    /// The client did not take what its stream sent in time: the stream ended.
    public static let slowReader = ErrorReason(rawValue: "SLOW_READER")
    /// Calls of the connection that ended still hold their work: retry shortly.
    public static let stillFinishing = ErrorReason(rawValue: "STILL_FINISHING")
    /// The server is shutting down.
    public static let shuttingDown = ErrorReason(rawValue: "SHUTTING_DOWN")
    /// A majority of the members did not acknowledge a quorum write in time.
    public static let noQuorum = ErrorReason(rawValue: "NO_QUORUM")
    /// A read with `min_sequence` waited longer than its limit for the event.
    public static let notCaughtUp = ErrorReason(rawValue: "NOT_CAUGHT_UP")
    /// The log is damaged: writes are refused until the data directory is repaired.
    public static let logDamaged = ErrorReason(rawValue: "LOG_DAMAGED")
    /// A device replica found a queued write damaged on the device's disk (its checksum
    /// did not match): it was taken aside, never sent. Given by the replica, not a server.
    public static let damagedOnDevice = ErrorReason(rawValue: "DAMAGED_ON_DEVICE")
    /// A write on a device replica opened for reading (an app extension's): the app
    /// writes. Given by the replica, not a server.
    public static let readOnlyReplica = ErrorReason(rawValue: "READ_ONLY_REPLICA")
    /// The client cannot reach the server.
    public static let cannotConnect = ErrorReason(rawValue: "CANNOT_CONNECT")
    /// The client's connection was lost while the call was in flight.
    public static let connectionLost = ErrorReason(rawValue: "CONNECTION_LOST")
    /// The server holds the connection but did not answer a health check in time during
    /// a slow call (a frozen process, a host cut off after the connection was made).
    public static let serverNotAnswering = ErrorReason(rawValue: "SERVER_NOT_ANSWERING")
}
