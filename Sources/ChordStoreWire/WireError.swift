public import ChordStoreDomain

/// The error of the server and the wire: a status code (gRPC's numbers), a reason for a
/// machine (``ChordStoreDomain/ErrorReason``), a message for a person, and what the
/// framed `Status` carries besides. Errors of the engine
/// (``ChordStoreDomain/ChordStoreError``) carry the same codes and reasons.
public struct WireError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The status code.
    public var code: StatusCode
    /// Why, for a machine (the code's name when nothing more specific applies).
    public var reason: ErrorReason
    /// What went wrong.
    public var message: String
    /// With `ABORTED` for an expected-revision mismatch: the item's revision now.
    public var currentRevision: UInt64?
    /// With `FAILED_PRECONDITION` for a write sent to a follower: the leader's HOST:PORT.
    public var leader: String?

    /// Creates an error; `reason` defaults to the code's name.
    public init(_ code: StatusCode, _ message: String, reason: ErrorReason? = nil, currentRevision: UInt64? = nil, leader: String? = nil) {
        self.code = code
        self.reason = reason ?? ErrorReason(code)
        self.message = message
        self.currentRevision = currentRevision
        self.leader = leader
    }

    /// The wire form of an engine error.
    public init(_ error: ChordStoreError) {
        self.init(error.code, error.message, reason: error.reason, currentRevision: error.currentRevision)
    }

    public var description: String { "\(code): \(message)" }

    /// `error` itself if it is a ``WireError``, the wire form of an engine error, or
    /// `INTERNAL` for anything else.
    public static func wrapping(_ error: any Error) -> WireError {
        if let error = error as? WireError { return error }
        if let error = error as? ChordStoreError { return WireError(error) }
        return WireError(.internal, "\(error)")
    }
}
