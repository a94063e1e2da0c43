public import ChordStoreWire

/// A call's failure: the server's status, or a local one (`UNAVAILABLE` when the
/// connection is lost, `DEADLINE_EXCEEDED` when the deadline passes first).
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
