/// How a method of the service runs, which decides how every transport carries it and
/// whether a client may retry it.
public enum MethodKind: Sendable, Hashable {
    /// A change of the call's store (a ``ChordStoreDomain/Command``): handed to the one
    /// writer; it carries a command id, so a client may send it again and it applies once.
    case command
    /// A change of the server (a store, a token, an import): unary, never retried (a
    /// repeat would fail with `ALREADY_EXISTS` or `NOT_FOUND`, or make a second token).
    case serverChange
    /// One short read of a store, answered on the connection's event loop.
    case pointRead
    /// Any other unary call.
    case unary
    /// A server stream: messages, then a final status.
    case serverStream
}
