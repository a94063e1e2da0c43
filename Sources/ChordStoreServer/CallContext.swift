/// What a call carries besides its request: who made it, and over which connection.
public struct CallContext: Sendable {
    /// The session commands are recorded under when they name none (the call's
    /// `session` metadata, or the connection's default).
    public var session: String
    /// The IP address the call's connection comes from (empty when unknown).
    public var peerAddress: String

    /// Creates a call context.
    public init(session: String, peerAddress: String) {
        self.session = session
        self.peerAddress = peerAddress
    }
}
