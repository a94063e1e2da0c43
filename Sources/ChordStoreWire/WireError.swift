public import ChordStoreDomain

/// A protocol-level error: its status code (gRPC's numbers) and a message for a person.
/// Errors of the engine (``ChordStoreDomain/ChordStoreError``) carry the same codes.
public struct WireError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The status code.
    public var code: StatusCode
    /// What went wrong.
    public var message: String
    /// With `ABORTED` for an expected-revision mismatch: the item's revision now.
    public var currentRevision: UInt64?
    /// With `FAILED_PRECONDITION` for a write sent to a follower: the leader's HOST:PORT.
    public var leader: String?

    /// Creates an error.
    public init(_ code: StatusCode, _ message: String, currentRevision: UInt64? = nil, leader: String? = nil) {
        self.code = code
        self.message = message
        self.currentRevision = currentRevision
        self.leader = leader
    }

    /// The wire form of an engine error.
    public init(_ error: ChordStoreError) {
        self.init(
            StatusCode(rawValue: UInt32(clamping: error.code.rawValue)) ?? .unknown, error.message,
            currentRevision: error.currentRevision)
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
