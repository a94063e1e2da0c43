/// What a call carries besides its request: who made it, over which connection, and the
/// store it works on.
public struct CallContext: Sendable {
    /// The session commands are recorded under when they name none (the call's
    /// `session` metadata, or the connection's default).
    public var session: String
    /// The IP address the call's connection comes from (empty when unknown).
    public var peerAddress: String
    /// The store the call works on (its `store` field; empty means `default`). Methods
    /// of the whole server ignore it.
    public var store: String
    /// Who the call comes from (its credentials, checked).
    public var principal: Principal

    /// Creates a call context.
    public init(session: String, peerAddress: String, store: String = "", principal: Principal = .unrestricted) {
        self.session = session
        self.peerAddress = peerAddress
        self.store = store
        self.principal = principal
    }
}
