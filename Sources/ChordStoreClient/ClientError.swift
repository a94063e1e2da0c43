public import ChordStoreWire

/// A call's failure: the server's status (deadlines are enforced by the server), or a
/// local one: `UNAVAILABLE` when the connection is lost, `CANCELLED` when the calling
/// task is cancelled.
public struct ClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The status code.
    public var code: StatusCode
    /// What went wrong.
    public var message: String

    /// Creates an error.
    public init(_ code: StatusCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
