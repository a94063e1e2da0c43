public import Hummingbird
public import NIOCore

/// The HTTP endpoint's request context: Hummingbird's basics and the address of the
/// peer, which failed credentials are counted against.
public struct EndpointRequestContext: RequestContext, RemoteAddressRequestContext {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    /// The peer's address (`nil` when the channel has none).
    public let remoteAddress: SocketAddress?

    /// The context of a request on `source`'s channel.
    public init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
