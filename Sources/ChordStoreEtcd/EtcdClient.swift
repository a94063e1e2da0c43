public import ChordStoreDomain
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import SwiftProtobuf
import Synchronization

/// A client of etcd's v3 gRPC API (KV, Watch, Lease): the calls the coordinator makes,
/// each within a deadline. With several endpoints, a call that cannot reach one tries the
/// next (and later calls start from the one that answered). One HTTP/2 connection per
/// endpoint, reconnecting within a second after etcd comes back.
public final class EtcdClient: Sendable {
    /// The endpoints, in the order given.
    public let endpoints: [EtcdEndpoint]
    private let clients: [GRPCClient<HTTP2ClientTransport.Posix>]
    private let runners: Mutex<[Task<Void, Never>]>
    /// The endpoint the next call tries first.
    private let preferred = Atomic<Int>(0)
    /// Where every call and the connections run: a thread of their own.
    private let loopExecutor = LoopExecutor()

    /// The executor the client's calls run on: the coordinator's loops run there too.
    public var executor: any TaskExecutor { loopExecutor }

    /// Connects (lazily) to `endpoints`, over TLS for `https://` ones.
    public init(endpoints: [EtcdEndpoint], tls: EtcdTLS? = nil) throws(ChordStoreError) {
        precondition(!endpoints.isEmpty, "at least one endpoint")
        self.endpoints = endpoints
        var clients: [GRPCClient<HTTP2ClientTransport.Posix>] = []
        do {
            for endpoint in endpoints {
                let transport = try HTTP2ClientTransport.Posix(
                    target: Self.target(endpoint),
                    transportSecurity: Self.security(endpoint, tls),
                    config: .defaults { config in
                        // etcd restarts in a second or two: come back as quickly.
                        config.backoff = .init(initial: .milliseconds(100), max: .seconds(1), multiplier: 1.6, jitter: 0.2)
                        config.connection.keepalive = .init(time: .seconds(10), timeout: .seconds(2), allowWithoutCalls: true)
                    })
                clients.append(GRPCClient(transport: transport))
            }
        } catch {
            throw ChordStoreError(.invalidArgument, "cannot set up a connection to etcd: \(error)")
        }
        self.clients = clients
        let executor = loopExecutor
        self.runners = Mutex(clients.map { client in Task(executorPreference: executor) { try? await client.runConnections() } })
    }

    /// An IP address is its own target (a name's target would send it as the TLS server
    /// name, which TLS forbids for addresses); a name is resolved by DNS.
    private static func target(_ endpoint: EtcdEndpoint) -> any ResolvableTarget {
        if endpoint.host.contains(":") { return .ipv6(address: endpoint.host, port: endpoint.port) }
        let parts = endpoint.host.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 4, parts.allSatisfy({ UInt8($0) != nil }) { return .ipv4(address: endpoint.host, port: endpoint.port) }
        return .dns(host: endpoint.host, port: endpoint.port)
    }

    private static func security(_ endpoint: EtcdEndpoint, _ tls: EtcdTLS?) -> HTTP2ClientTransport.Posix.TransportSecurity {
        guard endpoint.usesTLS else { return .plaintext }
        let roots: TLSConfig.TrustRootsSource = tls?.caFile.map { .certificates([.file(path: $0, format: .pem)]) } ?? .systemDefault
        if let certificate = tls?.certificateFile, let key = tls?.keyFile {
            return .mTLS(certificateChain: [.file(path: certificate, format: .pem)], privateKey: .file(path: key, format: .pem)) {
                $0.trustRoots = roots
            }
        }
        return .tls { $0.trustRoots = roots }
    }

    /// Closes the connections.
    public func close() async {
        for client in clients { client.beginGracefulShutdown() }
        let tasks = runners.withLock { tasks in
            defer { tasks = [] }
            return tasks
        }
        for task in tasks {
            task.cancel()
            await task.value
        }
        await loopExecutor.shutdown()
    }

    // MARK: Calls

    /// `Range`: the keys from `key` (to `end`, exclusive, when given).
    func range(_ key: [UInt8], end: [UInt8]? = nil, timeout: Duration) async throws(ChordStoreError) -> Etcdserverpb_RangeResponse {
        try await unary(Self.rangeMethod, Etcdserverpb_RangeRequest.with {
            $0.key = Data(key)
            if let end { $0.rangeEnd = Data(end) }
        }, timeout: timeout)
    }

    /// `Txn`: the comparisons, then `success` or `failure`, atomically.
    func txn(_ request: Etcdserverpb_TxnRequest, timeout: Duration) async throws(ChordStoreError) -> Etcdserverpb_TxnResponse {
        try await unary(Self.txnMethod, request, timeout: timeout)
    }

    /// `LeaseGrant`: a new lease of `ttl` whole seconds (etcd may raise it to its minimum).
    func grantLease(ttl: Int64, timeout: Duration) async throws(ChordStoreError) -> Etcdserverpb_LeaseGrantResponse {
        let response: Etcdserverpb_LeaseGrantResponse = try await unary(Self.grantMethod, Etcdserverpb_LeaseGrantRequest.with { $0.ttl = ttl }, timeout: timeout)
        guard response.error.isEmpty, response.id != 0 else { throw ChordStoreError(.unavailable, "etcd granted no lease: \(response.error)") }
        return response
    }

    /// `LeaseRevoke`: the lease ends now, and the keys attached to it go.
    func revokeLease(_ id: Int64, timeout: Duration) async throws(ChordStoreError) {
        do {
            let _: Etcdserverpb_LeaseRevokeResponse = try await unary(Self.revokeMethod, Etcdserverpb_LeaseRevokeRequest.with { $0.id = id }, timeout: timeout)
        } catch where error.code == .notFound {
            return  // already gone (etcd's "requested lease not found")
        }
    }

    /// One `LeaseKeepAlive` round: the lease's new time to live in seconds (0 or less:
    /// etcd no longer knows it).
    func keepAlive(_ id: Int64, timeout: Duration) async throws(ChordStoreError) -> Int64 {
        try await withFailover(timeout: timeout) { client, options in
            try await client.bidirectionalStreaming(
                request: StreamingClientRequest(of: Etcdserverpb_LeaseKeepAliveRequest.self) { writer in
                    try await writer.write(.with { $0.id = id })
                },
                descriptor: Self.keepAliveMethod,
                serializer: ProtobufCoder<Etcdserverpb_LeaseKeepAliveRequest>(),
                deserializer: ProtobufCoder<Etcdserverpb_LeaseKeepAliveResponse>(),
                options: options
            ) { response in
                for try await message in response.messages { return message.ttl }
                throw RPCError(code: .unavailable, message: "etcd ended the keep-alive stream without an answer")
            }
        }
    }

    /// `Watch` of the keys from `key` to `end` (exclusive), from `revision` on: etcd's
    /// responses, until the stream breaks (it then throws) or the consumer stops.
    func watch(_ key: [UInt8], end: [UInt8], from revision: Int64) -> AsyncThrowingStream<Etcdserverpb_WatchResponse, any Error> {
        let index = preferred.load(ordering: .relaxed) % clients.count
        let client = clients[index]
        let endpoint = endpoints[index]
        return AsyncThrowingStream { continuation in
            let task = Task(executorPreference: loopExecutor) {
                // The request side stays open: etcd ends a watch whose client stops sending.
                let (held, holder) = AsyncStream.makeStream(of: Void.self)
                defer { holder.finish() }
                do {
                    try await client.bidirectionalStreaming(
                        request: StreamingClientRequest(of: Etcdserverpb_WatchRequest.self) { writer in
                            try await writer.write(.with {
                                $0.createRequest = .with {
                                    $0.key = Data(key)
                                    $0.rangeEnd = Data(end)
                                    $0.startRevision = revision
                                }
                            })
                            for await _ in held {}
                        },
                        descriptor: Self.watchMethod,
                        serializer: ProtobufCoder<Etcdserverpb_WatchRequest>(),
                        deserializer: ProtobufCoder<Etcdserverpb_WatchResponse>(),
                        options: .defaults
                    ) { response in
                        for try await message in response.messages { continuation.yield(message) }
                    }
                    continuation.finish(throwing: ChordStoreError(.unavailable, "etcd at \(endpoint) ended the watch"))
                } catch {
                    continuation.finish(throwing: ChordStoreError(.unavailable, "the watch on etcd at \(endpoint) broke: \(Self.describe(error))"))
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    // MARK: Plumbing

    private func unary<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ method: MethodDescriptor, _ request: Request, timeout: Duration
    ) async throws(ChordStoreError) -> Response {
        try await withFailover(timeout: timeout) { client, options in
            try await client.unary(
                request: ClientRequest(message: request), descriptor: method, serializer: ProtobufCoder<Request>(),
                deserializer: ProtobufCoder<Response>(), options: options
            ) { try $0.message }
        }
    }

    /// Runs `call` on the preferred endpoint, then, while the endpoint cannot be reached
    /// and `timeout` has not passed since the first try, on the next ones; the last
    /// failure is thrown. The whole, not each try, is bound by `timeout`: a lease renewal
    /// must end within its share of the lease however many endpoints there are.
    private func withFailover<T: Sendable>(
        timeout: Duration, _ call: (GRPCClient<HTTP2ClientTransport.Posix>, CallOptions) async throws -> T
    ) async throws(ChordStoreError) -> T {
        try await withTaskExecutorPreference(loopExecutor) { () async throws(ChordStoreError) -> T in
            try await tryEndpoints(timeout: timeout, call)
        }
    }

    private func tryEndpoints<T: Sendable>(
        timeout: Duration, _ call: (GRPCClient<HTTP2ClientTransport.Posix>, CallOptions) async throws -> T
    ) async throws(ChordStoreError) -> T {
        let deadline = ContinuousClock.now + timeout
        var options = CallOptions.defaults
        options.waitForReady = false
        let first = preferred.load(ordering: .relaxed)
        var failure = ChordStoreError(.unavailable, "no etcd endpoint")
        for step in 0..<clients.count {
            let index = (first + step) % clients.count
            let remaining = deadline - ContinuousClock.now
            guard remaining > .milliseconds(1) else { break }
            options.timeout = remaining
            do {
                let result = try await call(clients[index], options)
                if step > 0 { preferred.store(index, ordering: .relaxed) }
                return result
            } catch {
                let code = (error as? RPCError)?.code
                let mapped: ChordStoreError.Code = switch code {
                case .unavailable?, .deadlineExceeded?, nil: .unavailable
                case .notFound?: .notFound  // a lease etcd does not know
                default: .failedPrecondition
                }
                failure = ChordStoreError(mapped, "etcd at \(endpoints[index]): \(Self.describe(error))")
                guard code == .unavailable || code == .deadlineExceeded || code == nil, !Task.isCancelled else { throw failure }
            }
        }
        throw failure
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? RPCError { return "\(error.code): \(error.message)" }
        return "\(error)"
    }

    private static let rangeMethod = MethodDescriptor(fullyQualifiedService: "etcdserverpb.KV", method: "Range")
    private static let txnMethod = MethodDescriptor(fullyQualifiedService: "etcdserverpb.KV", method: "Txn")
    private static let grantMethod = MethodDescriptor(fullyQualifiedService: "etcdserverpb.Lease", method: "LeaseGrant")
    private static let revokeMethod = MethodDescriptor(fullyQualifiedService: "etcdserverpb.Lease", method: "LeaseRevoke")
    private static let keepAliveMethod = MethodDescriptor(fullyQualifiedService: "etcdserverpb.Lease", method: "LeaseKeepAlive")
    private static let watchMethod = MethodDescriptor(fullyQualifiedService: "etcdserverpb.Watch", method: "Watch")
}
