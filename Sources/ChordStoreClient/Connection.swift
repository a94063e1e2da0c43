public import ChordStoreAPI
public import ChordStoreProto
import ChordStoreDomain
public import ChordStoreWire
public import Foundation
import NIOCore
public import SwiftProtobuf
import Synchronization

/// One connection to a ChordStore server, carrying any number of concurrent calls.
///
/// ```swift
/// let connection = try await Connection.connect(host: "127.0.0.1", port: 7420)
/// let profile: Chordstore_V1_Profile = try await connection.call(
///     .getProfile, Chordstore_V1_GetProfileRequest())
/// ```
@_spi(Raw) public final class Connection: Sendable {
    private let channel: any Channel
    private let router: ReplyRouter
    private let nextCallID = Atomic<UInt64>(1)
    /// The store every call of this connection works on (empty: `default`); calls of the
    /// whole server (health, stores, replication) ignore it.
    public let store: String
    /// The metadata every call carries for the credentials (token, cluster secret).
    private let credentialMetadata: [String: String]
    /// Whether the connection uses TLS (a plaintext one to a TLS server is closed at once).
    private let usesTLS: Bool

    private init(channel: any Channel, router: ReplyRouter, store: String, credentials: ClientCredentials) {
        self.channel = channel
        self.router = router
        self.store = store
        self.credentialMetadata = credentials.metadata
        self.usesTLS = credentials.tls != nil
    }

    /// Whether the connection is still open (the server has not closed it).
    var isOpen: Bool { channel.isActive }

    /// The error of a call whose connection closed before its reply (`lost`): the
    /// server's `FRAME_TOO_LARGE` when the call's own frame, of `frameBytes`, was over the
    /// limit its `GoAway` names (the same request never fits), else `UNAVAILABLE`
    /// (`CONNECTION_LOST`).
    private func closedError(_ lost: String, frameBytes: Int) -> ClientError {
        if let goAway = router.goAway, goAway.status.reason == ErrorReason.frameTooLarge.rawValue,
           goAway.maxFrameSize > 0, UInt64(frameBytes) > goAway.maxFrameSize {
            return ClientError(
                .resourceExhausted,
                "the request's frame of \(frameBytes) bytes exceeds the server's limit of \(goAway.maxFrameSize) bytes (its --max-frame-size)",
                reason: .frameTooLarge)
        }
        return ClientError(.unavailable, "\(lost)\(closedBecause)", reason: .connectionLost)
    }

    /// Why the connection closed, as a clause for an error message.
    private var closedBecause: String {
        // A TLS server closes a plaintext connection without a GoAway: the hint is for that.
        let reason = router.closeReason
        let hint = usesTLS || reason != nil ? nil : "if the server uses TLS, connect with TLS: a TLS server closes plaintext connections"
        let parts = [reason, hint].compactMap { $0 }
        return parts.isEmpty ? "" : " (\(parts.joined(separator: "; ")))"
    }

    /// Connects to `host:port`, from `localAddress` (an IP address of this machine) when
    /// given: a cluster member connects from the address it advertises, which is how the
    /// leader tells who it is (see docs/REPLICATION.md). Its calls work on `store` (empty:
    /// `default`), showing `credentials` (docs/SECURITY.md). A host that does not answer
    /// within `connectTimeout` (cut off, say) fails the connection with `UNAVAILABLE`.
    public static func connect(
        host: String, port: Int, maxFrameSize: Int = WireLimits.defaultMaxFrameSize, localAddress: String? = nil,
        store: String = "", credentials: ClientCredentials = ClientCredentials(), connectTimeout: Duration = .seconds(10)
    ) async throws(ClientError) -> Connection {
        let router = ReplyRouter()
        do {
            let channel: any Channel
            do {
                channel = try await ConnectionBootstrap.connect(
                    host: host, port: port, from: localAddress, tls: credentials.tls, maxFrameSize: maxFrameSize, router: router,
                    connectTimeout: connectTimeout)
            } catch where localAddress != nil {
                // The local address cannot reach this host (another address family, say):
                // from wherever the system picks, as any client.
                channel = try await ConnectionBootstrap.connect(
                    host: host, port: port, from: nil, tls: credentials.tls, maxFrameSize: maxFrameSize, router: router,
                    connectTimeout: connectTimeout)
            }
            router.setReading { [channel] on in
                channel.eventLoop.execute {
                    channel.setOption(ChannelOptions.autoRead, value: on).whenComplete { _ in }
                    if on { channel.read() }
                }
            }
            return Connection(channel: channel, router: router, store: store, credentials: credentials)
        } catch {
            throw ClientError(.unavailable, "cannot connect to \(host):\(port): \(error)", reason: .cannotConnect)
        }
    }

    /// Makes a unary call and decodes its response as `Response`.
    public func call<Response: SwiftProtobuf.Message>(
        _ method: Method, _ request: some SwiftProtobuf.Message, timeout: Duration? = nil,
        metadata: [String: String] = [:], minSequence: UInt64 = 0, as: Response.Type = Response.self
    ) async throws(ClientError) -> Response {
        let payload = try await callRaw(method, request, timeout: timeout, metadata: metadata, minSequence: minSequence)
        do {
            return try Response(serializedBytes: payload)
        } catch {
            throw ClientError(.internal, "the reply to \(method.rawValue) is not a \(Response.protoMessageName)")
        }
    }

    /// Makes a unary call and returns the raw response payload. A read with `minSequence`
    /// waits on the server until it has applied that event (read your writes on a replica).
    public func callRaw(
        _ method: Method, _ request: some SwiftProtobuf.Message, timeout: Duration? = nil, metadata: [String: String] = [:],
        minSequence: UInt64 = 0
    ) async throws(ClientError) -> Data {
        let callID = nextCallID.add(1, ordering: .relaxed).oldValue
        let replies = router.open(callID)
        defer { router.close(callID) }
        let frameBytes = try await send(
            callID: callID, method: method.rawValue, request: request, timeout: timeout, metadata: metadata,
            minSequence: minSequence)
        var payload = Data()
        do {
            for try await reply in replies {
                if !reply.payload.isEmpty { payload = reply.payload }
                if reply.hasStatus {
                    guard reply.status.code == 0 else {
                        throw ClientError(reply.status)
                    }
                    return payload
                }
            }
        } catch let error as ClientError {
            throw error
        } catch {
            throw ClientError(.internal, "\(error)")
        }
        if Task.isCancelled {
            try? await cancel(callID)
            throw ClientError(.cancelled, "the call was cancelled")
        }
        throw closedError("the connection closed before the reply", frameBytes: frameBytes)
    }

    /// Makes a server-streaming call; the sequence yields each message and ends with the
    /// call's status (throwing a ``ClientError`` unless it is OK).
    public func stream<Message: SwiftProtobuf.Message>(
        _ method: Method, _ request: some SwiftProtobuf.Message, timeout: Duration? = nil, as: Message.Type = Message.self
    ) async throws(ClientError) -> ServerStream<Message> {
        let callID = nextCallID.add(1, ordering: .relaxed).oldValue
        let replies = router.open(callID)
        do {
            _ = try await send(callID: callID, method: method.rawValue, request: request, timeout: timeout, metadata: [:], minSequence: 0)
        } catch {
            router.close(callID)
            throw error
        }
        let handle = CallHandle(callID: callID, router: router) { [weak self] callID in
            guard let self else { return }
            Task { try? await self.cancel(callID) }
        }
        return ServerStream(replies: replies, call: handle)
    }

    /// Asks the server to cancel a call.
    public func cancel(_ callID: UInt64) async throws(ClientError) {
        var frame = Chordstore_V1_Frame()
        frame.cancel = .with { $0.callID = callID }
        try await write(frame)
    }

    /// The next call id this connection will use.
    public var upcomingCallID: UInt64 { nextCallID.load(ordering: .relaxed) }

    /// Closes the connection; calls in flight fail with `UNAVAILABLE`.
    public func close() async {
        try? await channel.close()
    }

    /// Resolves when the server closes the connection; gives the `GoAway` it sent, if any.
    public func closed() async -> Chordstore_V1_GoAway? {
        try? await channel.closeFuture.get()
        return router.goAway
    }

    /// Sends a call's frame; returns the frame's size in bytes.
    private func send(
        callID: UInt64, method: String, request: some SwiftProtobuf.Message, timeout: Duration?, metadata: [String: String],
        minSequence: UInt64
    ) async throws(ClientError) -> Int {
        var call = Chordstore_V1_Call()
        call.callID = callID
        call.method = method
        call.metadata = credentialMetadata.isEmpty ? metadata : metadata.merging(credentialMetadata) { own, _ in own }
        call.minSequence = minSequence
        call.store = store
        if let timeout {
            let (seconds, attoseconds) = timeout.components
            let (micros, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
            call.timeoutMicros = overflow || micros < 0 ? (seconds < 0 ? 1 : UInt64.max)
                : UInt64(max(1, micros + attoseconds / 1_000_000_000_000))
        }
        do {
            call.payload = try request.serializedData()
        } catch {
            throw ClientError(.invalidArgument, "cannot encode the request: \(error)")
        }
        var frame = Chordstore_V1_Frame()
        frame.call = call
        return try await write(frame)
    }

    /// Writes a frame; returns its size in bytes.
    @discardableResult
    private func write(_ frame: Chordstore_V1_Frame) async throws(ClientError) -> Int {
        let body: ByteBuffer
        do {
            body = try frame.body(allocator: channel.allocator)
        } catch {
            throw ClientError(.invalidArgument, "cannot encode the frame: \(error)")
        }
        do {
            try await channel.writeAndFlush(body).get()
        } catch {
            // The server may have closed the connection over this very frame's size: once
            // the channel is closed, its GoAway (if any came) has been read.
            if !channel.isActive { try? await channel.closeFuture.get() }
            throw closedError("cannot send to the server: \(error)", frameBytes: body.readableBytes)
        }
        return body.readableBytes
    }
}
