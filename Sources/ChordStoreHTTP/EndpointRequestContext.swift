import Hummingbird
import NIOCore

/// The HTTP endpoint's request context: Hummingbird's basics, the address of the peer
/// (failed credentials are counted against it, streams limited by it) and its channel
/// (a stream ends when the client closes it).
struct EndpointRequestContext: RequestContext, RemoteAddressRequestContext {
    /// Hummingbird's per-request storage.
    var coreContext: CoreRequestContextStorage
    /// The peer's address (`nil` when the channel has none).
    let remoteAddress: SocketAddress?
    /// The request's connection.
    let channel: any Channel

    /// The context of a request on `source`'s channel.
    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
    }
}
