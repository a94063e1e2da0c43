public import ChordStoreAPI
import ChordStoreProto
import ChordStoreWire
import ChordStoreDomain
import Foundation
public import SwiftProtobuf
import Synchronization

/// A client that reconnects: calls go over one ``Connection`` to `host:port`, opened on
/// first use and reopened when it is lost, or after a call got no reply at all past its
/// deadline (and ``deadlineGrace``): a stopped server or a wedged connection. A call that
/// fails because the connection was lost is retried on a new one when retrying is safe:
/// reads always, and commands because the client gives every command a command id (unless
/// the caller set one), so the server applies a retried command once and answers it with
/// the original event.
///
/// A write sent to a follower of a replicated cluster is refused with the leader's
/// address; the client then moves to the leader and sends it there (at most
/// ``RetryPolicy/redirects`` times per call), and later calls go to the leader too.
///
/// A client that knows several servers (``init(servers:retry:localAddress:store:credentials:)``,
/// or a follower that named its leader) follows the leader through a failover: when the
/// server it talks to is lost, or answers that no leader is known, it asks every server
/// it knows who leads (`Health`), moves there and retries, for up to
/// ``RetryPolicy/failover``.
///
/// ```swift
/// let client = Client(host: "127.0.0.1", port: 7420, credentials: ClientCredentials(token: token))
/// let verse = try await client.addChordset(title: "Verse")
/// for try await event in client.events(from: 1) { print(event.sequence) }
/// ```
///
/// Its API speaks the domain (``ChordStoreDomain/Chordset``,
/// ``ChordStoreDomain/RecordedEvent``, …); calls in the protocol's own messages are
/// `@_spi(Raw)`, for tools and the server's own members.
public final class Client: Sendable {
    /// How often and how patiently calls are retried after a lost connection.
    public struct RetryPolicy: Sendable {
        /// Attempts in all, the first included, while the client knows one server.
        public var attempts = 5
        /// Wait before the first retry; doubles each time.
        public var backoff: Duration = .milliseconds(50)
        /// Moves to a leader named by a follower's refusal, per call.
        public var redirects = 3
        /// While the client knows several servers: how long a call keeps looking for the
        /// leader and retrying (a failover takes a few seconds), its waits doubling up to
        /// half a second.
        public var failover: Duration = .seconds(15)
        /// How long a new connection may take to be accepted (a host cut off never
        /// answers).
        public var connectTimeout: Duration = .seconds(3)
        /// While the client knows one server: how long a slow call waits before a
        /// `Health` call checks that server, and then each check's patience. A check
        /// unanswered within it fails the call with `UNAVAILABLE` and
        /// ``ErrorReason/serverNotAnswering`` (not retried), so that a stopped server (a
        /// frozen process, a host cut off after the connection was made) does not keep a
        /// call waiting for ever. `nil`, the default: a call to one server waits for its
        /// deadline, or as long as it takes without one. The command line sets 5 s. With
        /// several servers, calls are always checked, every ``Client/livenessInterval``.
        public var loneServerLiveness: Duration?

        /// The default policy: 5 attempts, 50 ms doubling; 15 s of failover; 3 s to connect.
        public init() {}

        /// One attempt and no redirect: for calls about the node asked (its status, a
        /// replication call), which must neither repeat nor move to another node.
        public static let once: RetryPolicy = {
            var retry = RetryPolicy()
            retry.attempts = 1
            retry.redirects = 0
            retry.failover = .zero
            retry.connectTimeout = .seconds(1)
            return retry
        }()
    }

    let target: Mutex<(host: String, port: Int)>
    /// Every server this client knows: those it was given, then the leaders it was sent to.
    let servers: Mutex<[String]>
    private let retry: RetryPolicy
    private let localAddress: String?
    private let current = Mutex<Connection?>(nil)
    /// The store the client's calls work on (empty: `default`; see docs/PROTOCOL.md,
    /// "Stores").
    public let store: String
    /// What the client shows the server (token, cluster secret, TLS).
    public let credentials: ClientCredentials

    /// Creates a client; nothing connects until the first call. Its connections come from
    /// `localAddress` (an IP address of this machine) when given, its calls work on
    /// `store` (empty: `default`) and show `credentials`.
    public init(
        host: String, port: Int, retry: RetryPolicy = RetryPolicy(), localAddress: String? = nil, store: String = "",
        credentials: ClientCredentials = ClientCredentials()
    ) {
        self.target = Mutex((host, port))
        self.servers = Mutex([Self.join(host, port)])
        self.retry = retry
        self.localAddress = localAddress
        self.store = store
        self.credentials = credentials
    }

    /// Creates a client for `HOST:PORT`; `nil` if the address has no numeric port.
    public convenience init?(
        address: String, retry: RetryPolicy = RetryPolicy(), localAddress: String? = nil, store: String = "",
        credentials: ClientCredentials = ClientCredentials()
    ) {
        self.init(servers: [address], retry: retry, localAddress: localAddress, store: store, credentials: credentials)
    }

    /// Creates a client for the members of a cluster, each `HOST:PORT`: calls go to the
    /// first until a refusal or a failover names another (see the type's summary); `nil`
    /// if the list is empty or an address has no numeric port.
    public init?(
        servers: [String], retry: RetryPolicy = RetryPolicy(), localAddress: String? = nil, store: String = "",
        credentials: ClientCredentials = ClientCredentials()
    ) {
        guard let first = servers.first, let (host, port) = Self.split(first), servers.allSatisfy({ Self.split($0) != nil }) else { return nil }
        self.target = Mutex((host, port))
        self.servers = Mutex(servers.reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } })
        self.retry = retry
        self.localAddress = localAddress
        self.store = store
        self.credentials = credentials
    }

    /// Where calls go now (`host:port`): the address given, or the leader a follower named.
    public var address: String {
        let (host, port) = target.withLock { $0 }
        return Self.join(host, port)
    }

    /// Every server this client knows.
    public var knownServers: [String] { servers.withLock { $0 } }

    /// Makes a unary call, retrying on a new connection when the connection is lost and
    /// the call is safe to repeat, and following the leader (see the type's summary).
    @_spi(Raw) public func call<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ method: Method, _ request: Request, timeout: Duration? = nil, minSequence: UInt64 = 0,
        as: Response.Type = Response.self
    ) async throws(ClientError) -> Response {
        var request = request
        if var command = request as? any CommandRequest, command.commandContext.commandID.isEmpty {
            command.commandContext.commandID = UUID().uuidString
            if let identified = command as? Request { request = identified }
        }
        let retryable = Self.isRetryable(method, request)
        var backoff = Backoff(first: retry.backoff, limit: nil, jitter: 0)
        var failingOver: (since: ContinuousClock.Instant, backoff: Backoff, avoided: [String: UInt64])?
        var attempt = 1
        var redirects = 0
        while true {
            var used: Connection?
            do {
                let connection = try await connection()
                used = connection
                let attempt = request
                let call: @Sendable () async throws(ClientError) -> Response = {
                    guard let timeout else { return try await connection.call(method, attempt, minSequence: minSequence, as: Response.self) }
                    return try await Self.bounded(timeout + Self.deadlineGrace) {
                        try await connection.call(method, attempt, timeout: timeout, minSequence: minSequence, as: Response.self)
                    }
                }
                // With others to turn to, a server that stops answering (frozen, or cut
                // off) is noticed by a health check instead of waiting for the deadline.
                if knownServers.count > 1 && retry.failover > .zero { return try await Self.watched(connection, every: Self.livenessInterval, call) }
                if let liveness = retry.loneServerLiveness { return try await Self.watched(connection, every: liveness, call) }
                return try await call()
            } catch {
                let error = explained(error)
                var named = error.code == .failedPrecondition ? error.leader.flatMap { Self.split($0) == nil ? nil : $0 } : nil
                // A leader this call already lost (frozen, say) is not gone back to on a
                // follower's word: the followers name it until its lease lapses.
                if let leader = named, failingOver?.avoided[leader] != nil { named = nil }
                // Lost: the server could not be reached (not one that answered UNAVAILABLE,
                // as a leader does for a quorum that timed out), or it knows no leader.
                let unreachable = error.code == .unavailable && !error.isServerReply
                let lost = unreachable || (error.code == .failedPrecondition && named == nil && Self.isNotLeader(error))
                // A frame over the server's limit closed the connection (after its GoAway).
                // No reply past the deadline and its grace (the server enforces deadlines,
                // so it is stopped, or this connection is wedged): the next call opens a
                // new connection instead of waiting on this one again.
                let silent = error.code == .deadlineExceeded && !error.isServerReply
                if unreachable || silent || error.reason == .frameTooLarge { drop(used) }
                guard retryable else { throw error }
                if let leader = named, redirects < retry.redirects {
                    redirects += 1
                    moveTo(leader)
                    drop(used)
                    continue
                }
                // With several servers to ask, a lost server or an unknown leader is a
                // failover: ask the servers who leads until one is named, within the
                // failover's patience, and retry there.
                if lost, knownServers.count > 1, retry.failover > .zero {
                    var state = failingOver ?? (ContinuousClock.now, Backoff(first: retry.backoff, limit: .milliseconds(500), jitter: 0.2), [:])
                    var failed: Set<String> = unreachable ? [address] : []
                    var leader: String?
                    while leader == nil {
                        guard ContinuousClock.now - state.since < retry.failover else { throw error }
                        try? await Task.sleep(for: state.backoff.next())
                        leader = await findLeader(avoiding: &state.avoided, failed: failed)
                        failed = []
                    }
                    failingOver = state
                    if let leader { moveTo(leader) }
                    drop(used)
                    continue
                }
                // A lone server that stopped answering was given two intervals already.
                guard error.code == .unavailable, error.reason != .serverNotAnswering, attempt < retry.attempts else { throw error }
                try? await Task.sleep(for: backoff.next())
                attempt += 1
            }
        }
    }

    /// `error`, saying so when it asks for a token this client holds but kept from the
    /// server it called (``ClientCredentials/tokenServers``).
    private func explained(_ error: ClientError) -> ClientError {
        let address = self.address
        guard error.code == .unauthenticated, error.isServerReply, credentials.withholdsToken(from: address) else { return error }
        var explained = error
        let kept = (credentials.tokenServers ?? []).sorted().joined(separator: ", ")
        explained.message = "\(error.message) (this client's token is shown only to \(kept), not to \(address))"
        explained.reason = .tokenWithheld
        return explained
    }

    /// How long past a call's deadline the client waits for the server's answer before it
    /// gives up itself: the server enforces deadlines, but a stopped server never answers.
    public static let deadlineGrace: Duration = .seconds(1)

    /// `body`'s result, or `DEADLINE_EXCEEDED` after `limit` (`body` is then cancelled).
    static func bounded<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws(ClientError) -> T {
        do {
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    try? await Task.sleep(for: limit)
                    return nil
                }
                defer { group.cancelAll() }
                guard let result = try await group.next() ?? nil else {
                    throw ClientError(.deadlineExceeded, "no answer within \(limit), the deadline and a grace period")
                }
                return result
            }
        } catch let error as ClientError {
            throw error
        } catch {
            throw ClientError(.internal, "\(error)")
        }
    }

    /// `host` and `port` as one address, as ``split(_:)`` reads it: an IPv6 host in
    /// brackets (`[::1]:7420`), so that an address given either way is spelled one way.
    public static func join(_ host: String, _ port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// `HOST:PORT` split at its last colon (`nil` if the port is not a number); an IPv6
    /// host is written in brackets, `[::1]:7420`, and comes back without them.
    public static func split(_ address: String) -> (String, Int)? {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else { return nil }
        let host = address[..<colon]
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), host.count > 2 else { return nil }
            return (String(host.dropFirst().dropLast()), port)
        }
        return (String(host), port)
    }

    /// A server stream over the current connection (not retried: resume from the last
    /// sequence seen instead). A lost connection is replaced on the next call.
    @_spi(Raw) public func stream<Message: SwiftProtobuf.Message>(
        _ method: Method, _ request: some SwiftProtobuf.Message, as: Message.Type = Message.self
    ) async throws(ClientError) -> ServerStream<Message> {
        let connection = try await connection()
        do {
            return try await connection.stream(method, request, as: Message.self)
        } catch {
            if error.code == .unavailable { drop(connection) }
            throw error
        }
    }

    /// A server stream and the connection it runs on (so that a failure drops that
    /// connection, not one other calls have moved to since).
    func streamOnConnection<Message: SwiftProtobuf.Message>(
        _ method: Method, _ request: some SwiftProtobuf.Message, as: Message.Type = Message.self
    ) async throws(ClientError) -> (ServerStream<Message>, Connection) {
        let connection = try await connection()
        do {
            return (try await connection.stream(method, request, as: Message.self), connection)
        } catch {
            if error.code == .unavailable { drop(connection) }
            throw error
        }
    }

    /// Closes the current connection.
    public func close() async {
        let connection = current.withLock { connection in
            defer { connection = nil }
            return connection
        }
        await connection?.close()
    }

    func connection() async throws(ClientError) -> Connection {
        if let connection = current.withLock({ $0 }) {
            // One the server closed (a GoAway, an idle timeout) is replaced, not used.
            if connection.isOpen { return connection }
            drop(connection)
        }
        let (host, port) = target.withLock { $0 }
        let fresh = try await Connection.connect(
            host: host, port: port, localAddress: localAddress, store: store, credentials: credentials.shown(to: Self.join(host, port)),
            connectTimeout: retry.connectTimeout)
        let (winner, loser) = current.withLock { current -> (Connection, Connection?) in
            if let existing = current { return (existing, fresh) }
            current = fresh
            return (fresh, nil)
        }
        await loser?.close()
        return winner
    }

    /// Forgets `lost` if it is still the current connection (another call may already
    /// have replaced it) and closes it.
    func drop(_ lost: Connection?) {
        guard let lost else { return }
        current.withLock { current in
            if current === lost { current = nil }
        }
        Task { await lost.close() }
    }

    static func isRetryable(_ method: Method, _ request: some SwiftProtobuf.Message) -> Bool {
        // Each promotion raises the cluster's epoch: a refused one is not repeated.
        if method == .promote { return false }
        if !method.isCommand { return true }
        return (request as? any CommandRequest)?.commandContext.commandID.isEmpty == false
    }
}
