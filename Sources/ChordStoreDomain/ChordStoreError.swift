/// The error of the domain and the storage engine. Its ``Code`` values are gRPC's status
/// codes and its ``reason`` a stable name (``ErrorReason``), so the wire carries both
/// unchanged.
public struct ChordStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable error class: gRPC's status codes.
    public typealias Code = StatusCode

    /// The error class.
    public var code: Code
    /// Why, for a machine: stable, unlike ``message`` (the code's name when nothing more
    /// specific applies).
    public var reason: ErrorReason
    /// A sentence for a person: what was wrong and, where it helps, the limit.
    public var message: String
    /// The lower-level error, if any (for example an LMDB error).
    public var cause: (any Error)?
    /// With ``Code/aborted`` for an expected-revision mismatch: the item's revision now.
    public var currentRevision: UInt64?

    /// Creates an error; `reason` defaults to the code's name.
    public init(_ code: Code, _ message: String, reason: ErrorReason? = nil, cause: (any Error)? = nil, currentRevision: UInt64? = nil) {
        self.code = code
        self.reason = reason ?? ErrorReason(code)
        self.message = message
        self.cause = cause
        self.currentRevision = currentRevision
    }

    public var description: String { "\(code): \(message)" }

    public static func == (lhs: ChordStoreError, rhs: ChordStoreError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
    }
}

extension ChordStoreError {
    /// The refusal of a member whose log differs from another's at `detail`'s position.
    public static func diverged(_ detail: String) -> ChordStoreError {
        ChordStoreError(.failedPrecondition, "diverged: \(detail)", reason: .diverged)
    }

    /// The refusal of a write or a replication stream by a member that does not lead.
    public static func notLeader(_ detail: String) -> ChordStoreError {
        ChordStoreError(.failedPrecondition, "not the leader: \(detail)", reason: .notLeader)
    }
}
