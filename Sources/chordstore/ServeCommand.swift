import ArgumentParser
import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreEtcd
import ChordStoreGRPC
import ChordStoreHTTP
import ChordStoreReplication
import ChordStoreServer
import ChordStoreWire
import Dispatch
import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import UnixSignals

/// `chordstore serve`: runs the server on a data directory until SIGINT or SIGTERM.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the ChordStore server (loopback only unless --host says otherwise).",
        discussion: prose("""
            Serves the protocol of proto/chordstore/v1/rpc.proto (see docs/PROTOCOL.md) on
            HOST:PORT. On SIGINT or SIGTERM it stops accepting connections, ends clients'
            streams with UNAVAILABLE, lets the calls in flight finish (up to --grace
            seconds), commits what is queued, closes the log cleanly and exits 0. Logs go
            to standard error, as text or (--log-format json) one JSON object per line.

            The web console and operations (docs/CONSOLE.md, docs/OPERATIONS.md): the HTTP
            endpoint, on 127.0.0.1:7421 unless --http-host and --http-port say otherwise,
            serves the web console at /console/ (sign in with a token), the methods as
            JSON at /api/, Prometheus metrics at /metrics and health checks at
            /health/live and /health/ready. Without --http-port, a server whose port 7421
            is taken says so and goes on without it; --http-port none turns it off. The
            log's and the views' maps grow on their own up to --map-size-max each; past it, or on a full disk, writes are refused
            with RESOURCE_EXHAUSTED saying what is full, while reads, feeds and followers go
            on.

            gRPC (docs/PROTOCOL.md, "The gRPC endpoint"): --grpc-port also serves the
            ChordStore service over standard gRPC (HTTP/2) on --host, for grpcurl and the
            stubs protoc generates in any language, with the same tokens
            (`authorization: Bearer ...` metadata) and the same TLS, and gRPC's health
            and server reflection services (`grpcurl -plaintext HOST:PORT list`).

            Replication (docs/REPLICATION.md): give every member of a cluster the others'
            addresses with --peer (repeatable) and its own with --advertise. A member
            started with --follow LEADER copies that leader's log and refuses writes
            (naming the leader); one started without it leads, unless a reachable peer
            already leads with a newer epoch. `chordstore promote` makes a follower the
            leader; `chordstore status` shows roles, positions and lag.

            Automatic failover (docs/REPLICATION.md, "Automatic failover"): with
            --coordinator (etcd's client URLs) and --cluster NAME, the members keep the
            leader lease and the member list in etcd instead. No --follow: when the
            leader's lease lapses, the member furthest ahead takes over within seconds.
            The first member to start creates the member list from itself and its --peer
            addresses; `chordstore cluster add|remove` changes it, `chordstore cluster
            status` shows it. A member not in the list follows without voting.

            Security (docs/SECURITY.md): calls need a bearer token. On first start the
            server writes its own admin token to DATA/admin.token (mode 0600); the CLI on
            this machine reads it from there when it talks to a loopback address. Make
            tokens for others with `chordstore token create`. --auth none turns
            authentication off and is accepted only when every listener is on a loopback address
            (--host, where the framed and gRPC ports listen, and --http-host). --tls-cert and
            --tls-key turn TLS on; --tls-client-ca also asks clients for certificates.
            Cluster members prove themselves to each other with --cluster-secret-file
            (the same file on every member).
            """))

    @Option(name: .long, help: ArgumentHelp("The data directory (created if missing).", valueName: "DIR"))
    var data: String = ProcessInfo.processInfo.environment["CHORDSTORE_DATA"] ?? "chordstore-data"
    @Option(help: "The address to listen on.") var host = "127.0.0.1"
    @Option(help: "The port to listen on (0: any free port).") var port = 7420
    @Option(help: "This node's name, reported by the Health method.") var node = ProcessInfo.processInfo.hostName
    @Option(help: "Largest frame accepted, in bytes.") var maxFrameSize = WireLimits.defaultMaxFrameSize
    @Option(help: "Most open connections (the last sixteenth only for addresses that hold none).")
    var maxConnections = WireLimits().maxConnections
    @Option(help: "Most open connections from one IP address.") var maxConnectionsPerAddress = WireLimits().maxConnectionsPerAddress
    @Option(help: "Most calls in flight on one connection.") var maxCalls = WireLimits().maxCallsPerConnection
    @Option(help: ArgumentHelp("Most connections that have not shown a valid credential yet; a new one past it closes the oldest of them. Default: an eighth of the connections allowed.", valueName: "N"))
    var maxUnauthenticatedConnections: Int?
    @Option(help: ArgumentHelp("Seconds a connection has to make a call with a valid credential before it is closed (Health alone does not count).", valueName: "SECONDS"))
    var unauthenticatedTimeout = Int(WireLimits().unauthenticatedTimeout.components.seconds)
    @Option(help: "Most server streams (Subscribe, ReadLog, WatchQuery) one token holds open, over every connection and endpoint.")
    var maxStreamsPerToken = WireLimits().maxStreamsPerToken
    @Option(help: "Most server streams open on one store, whoever holds them.") var maxStreamsPerStore = WireLimits().maxStreamsPerStore
    @Option(help: "Most live queries (WatchQuery) the server runs at once.") var maxLiveQueries = WireLimits().maxLiveQueries
    @Option(help: "Most live queries one token runs at once.") var maxLiveQueriesPerToken = WireLimits().maxLiveQueriesPerToken
    @Option(help: "Most live queries on one store at once, whoever runs them.") var maxLiveQueriesPerStore = WireLimits().maxLiveQueriesPerStore
    @Option(help: ArgumentHelp("The gRPC endpoint: streams a client may reset (cancel) on one connection within 30 s; past it and 200 more, the connection is closed (a reset flood).", valueName: "N"))
    var maxStreamResets = WireLimits().maxStreamResets
    @Option(help: "Seconds a connection may stay idle.") var idleTimeout = 300
    @Option(help: "Seconds a new connection has to send its first complete frame.") var handshakeTimeout = 10
    @Option(help: "Seconds a frame may take from its first byte to its last.") var frameTimeout = 10
    @Option(help: "Bytes that partial frames over 64 KiB may hold in all; a frame that does not fit is refused.")
    var maxBufferedBytes = WireLimits().maxBufferedBytes
    @Option(help: "Seconds allowed for calls in flight to finish at shutdown.") var grace = 10
    @Option(help: "Log level: trace, debug, info, notice, warning, error or critical.") var logLevel = "info"
    @Option(help: ArgumentHelp("How log lines look: text, or json (one JSON object per line).", valueName: "FORMAT"))
    var logFormat = "text"
    @Option(help: ArgumentHelp("The HTTP endpoint's port: the web console (/console/), JSON calls (/api/), metrics (/metrics) and health checks (/health/...); 0: any free port; none: no HTTP endpoint. Default: 7421, skipped with a warning when taken.", valueName: "PORT"))
    var httpPort: String?
    @Option(help: ArgumentHelp("Also serve the ChordStore service as standard gRPC over HTTP/2 on this port of --host (0: any free port), with the same tokens and TLS; none if not given.", valueName: "PORT"))
    var grpcPort: Int?
    @Option(help: ArgumentHelp("Seconds an idle stream of server-sent events (HTTP endpoint) waits before a keep-alive comment; also how soon a client that went away is noticed.", valueName: "SECONDS"))
    var httpKeepalive = 15
    @Option(help: ArgumentHelp("The address the HTTP endpoint listens on. It asks for no credential: keep it on loopback or a monitoring network.", valueName: "HOST"))
    var httpHost = "127.0.0.1"
    @Option(help: ArgumentHelp("A follower reports ready (/health/ready) while at most this many events behind its leader.", valueName: "EVENTS"))
    var readyMaxLag: UInt64 = Readiness.Policy().maxLagEvents
    @Option(help: ArgumentHelp("The most each of the two maps (the log's, the views') grows to, in bytes, or with a suffix: 512MiB, 64GiB, 1TiB. Past it, writes are refused (reads go on) until a restart with a larger value.", valueName: "SIZE"))
    var mapSizeMax = "1TiB"
    @Option(help: ArgumentHelp("Follow the leader at this address: copy its log, serve reads, refuse writes.", valueName: "HOST:PORT"))
    var follow: String?
    @Option(name: .customLong("peer"), help: ArgumentHelp("Another member of the cluster (repeatable); the cluster has these plus this node.", valueName: "HOST:PORT"))
    var peers: [String] = []
    @Option(help: ArgumentHelp(
        "This node's address as the other members reach it (default: the address it listens on). Its replication connections come from this address when the machine owns it: a leader counts a member's acknowledgements only from its host.",
        valueName: "HOST:PORT"))
    var advertise: String?
    @Option(help: ArgumentHelp(
        "How a member started with --follow on a data directory with no log gets its first copy: copy (the leader's files, as a backup: seconds for a million events; reads are served from the copy's views while its log arrives) or replay (every event of the leader's log, one by one).",
        valueName: "HOW"))
    var bootstrap = "copy"
    @Option(help: "The durability of writes that ask for none: local (the leader's disk) or quorum (a majority's disks).")
    var durability = "local"
    @Option(help: "Seconds a quorum write waits for a majority when its call has no earlier deadline.")
    var quorumTimeout = 10
    @Flag(help: ArgumentHelp(
        "Keep every store's state in memory: commands are decided against it and write only the log before they are answered, and reads are answered from it. The state is saved to DIR/live-state at a clean stop and in the background (see --live-state-save-events); a start loads it and replays only the log's later events (without one, or with one that is not this log's, the whole log). The views take no commit: a backup, a new follower's copy or verify brings them up first. Memory holds the whole state twice (docs/PERFORMANCE.md). Without it the views serve reads and take every commit before it is answered."))
    var liveState = false
    @Option(help: ArgumentHelp(
        "With --live-state, the least events between two saves of the state in the background: a start after a kill or a machine crash replays at most about this many events after the state saved last (more for a large state: its file's size in bytes / 128, so that saving costs each event about a microsecond). Default: \(ChordStore.Options().liveStateSaveEvents).",
        valueName: "EVENTS"))
    var liveStateSaveEvents: UInt64?
    @Option(help: ArgumentHelp(
        "With --live-state, the most memory the state may take (both of its copies, as estimated from each store's chordsets, chords, events and command ids; docs/PERFORMANCE.md, \"The memory bound\"): over it, the stores used least recently are evicted, keeping only their index into the log (about 8 bytes an event) and command ids, and are folded again from the log on their next call (about 9 µs per event of the store; the calls after it find it in memory): a read's by the thread that answers it, a command's by the writer, which every write waits for, or for a store of 1,024 events or more by the thread that queues it. A start and a replay of the whole log keep within it too. A size such as 512MiB or 4GiB, or none for no bound. Default: half the memory this process may use (the machine's, or its container's cgroup memory.max if lower).",
        valueName: "SIZE"))
    var maxStateMemory: String?
    @Option(help: ArgumentHelp(
        "Keep a restore point of the views, taken at most this often while writes come (and after every 4,096 events): a start after a machine crash then catches the views up from it in a fraction of a second, instead of rebuilding them from the whole log (seconds per million events). It costs every write: the views' pages are written afresh and synced, about a third of the write throughput on a small machine (docs/PERFORMANCE.md). Not taken while --live-state keeps the state in memory: its saved state plays that part. Default: none.",
        valueName: "SECONDS"))
    var restorePointInterval: Double?
    @Option(help: "Most stores the server holds, 'default' included; creating one more is refused with RESOURCE_EXHAUSTED.")
    var maxStores = ChordStore.Options().maxStores
    @Option(help: "Most tokens the server holds; creating one more is refused with RESOURCE_EXHAUSTED.")
    var maxTokens = ChordStore.Options().maxTokens
    @Option(help: ArgumentHelp("How calls are authenticated: tokens (bearer tokens, the default) or none (anyone who reaches the port may do anything; loopback addresses only).", valueName: "MODE"))
    var auth = "tokens"
    @Option(help: ArgumentHelp("Serve TLS with this certificate chain (PEM); needs --tls-key.", valueName: "FILE"))
    var tlsCert: String?
    @Option(help: ArgumentHelp("The private key of --tls-cert (PEM).", valueName: "FILE"))
    var tlsKey: String?
    @Option(help: ArgumentHelp("Mutual TLS: accept only clients whose certificate this authority (PEM) issued; this node also shows --tls-cert to the other members.", valueName: "FILE"))
    var tlsClientCa: String?
    @Option(help: ArgumentHelp("With TLS: the authority (PEM) that issued the other members' certificates, for replication connections (default: --tls-client-ca, else the system's roots).", valueName: "FILE"))
    var tlsCa: String?
    @Option(help: ArgumentHelp(
        "Keep the leader lease and the member list in etcd at these client URLs (comma-separated: http://HOST:PORT, or https:// with --coordinator-ca): automatic failover. Needs --cluster.",
        valueName: "URL[,URL...]"))
    var coordinator: String?
    @Option(help: ArgumentHelp("The cluster's name in the coordinator (1-64 characters of a-z, A-Z, 0-9, '.', '_', '-'); the same on every member.", valueName: "NAME"))
    var cluster: String?
    @Option(help: ArgumentHelp(
        "Seconds of the leader's lease in the coordinator (2-60; default 2): a dead leader is replaced about this long after it stops renewing; it stops taking writes a quarter of it before.",
        valueName: "SECONDS"))
    var leaseTtl: Int?
    @Option(help: ArgumentHelp("With https:// coordinator URLs: the authority (PEM) that issued etcd's certificate (default: the system's roots).", valueName: "FILE"))
    var coordinatorCa: String?
    @Option(help: ArgumentHelp("With https:// coordinator URLs: this member's client certificate (PEM) for etcd's --client-cert-auth; needs --coordinator-key.", valueName: "FILE"))
    var coordinatorCert: String?
    @Option(help: ArgumentHelp("The private key of --coordinator-cert (PEM).", valueName: "FILE"))
    var coordinatorKey: String?
    @Option(help: ArgumentHelp("The cluster secret (its first line, at least 32 bytes), the same file on every member: members show it to each other, and only it allows replication and the cluster calls.", valueName: "FILE"))
    var clusterSecretFile: String?

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0...65535") }
        guard !node.isEmpty, node.utf8.count <= 255, !node.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw ValidationError("--node must be 1...255 bytes with no control characters")
        }
        guard maxFrameSize >= 1_024 else { throw ValidationError("--max-frame-size must be at least 1024") }
        guard maxConnections >= 1, maxCalls >= 1, (1...86_400).contains(idleTimeout), (0...3_600).contains(grace) else {
            throw ValidationError("--max-connections and --max-calls must be positive, --idle-timeout 1...86400, --grace 0...3600")
        }
        guard maxConnectionsPerAddress >= 1 else { throw ValidationError("--max-connections-per-address must be positive") }
        guard (maxUnauthenticatedConnections ?? 1) >= 1, (1...3_600).contains(unauthenticatedTimeout) else {
            throw ValidationError("--max-unauthenticated-connections must be positive, --unauthenticated-timeout 1...3600")
        }
        guard [maxStreamsPerToken, maxStreamsPerStore, maxLiveQueries, maxLiveQueriesPerToken, maxLiveQueriesPerStore].allSatisfy({ $0 >= 1 }) else {
            throw ValidationError("--max-streams-per-token, --max-streams-per-store, --max-live-queries, --max-live-queries-per-token and --max-live-queries-per-store must be positive")
        }
        guard maxStreamResets >= 0 else { throw ValidationError("--max-stream-resets must not be negative") }
        if let events = liveStateSaveEvents {
            guard liveState else { throw ValidationError("--live-state-save-events is for --live-state: without it the state is not kept in memory") }
            guard events >= 1 else { throw ValidationError("--live-state-save-events must be at least 1") }
        }
        if let maxStateMemory {
            guard liveState else { throw ValidationError("--max-state-memory is for --live-state: without it the state is not kept in memory") }
            guard maxStateMemory == "none" || (ByteSize.parse(maxStateMemory) ?? 0) >= 1 else {
                throw ValidationError("--max-state-memory takes a size such as 512MiB or 4GiB, or none; not '\(maxStateMemory)'")
            }
        }
        if let seconds = restorePointInterval, !(0.01...3_600).contains(seconds) {
            throw ValidationError("--restore-point-interval must be 0.01...3600 seconds")
        }
        guard (1...3_600).contains(handshakeTimeout), (1...3_600).contains(frameTimeout) else {
            throw ValidationError("--handshake-timeout and --frame-timeout must be 1...3600")
        }
        guard maxBufferedBytes >= maxFrameSize else {
            throw ValidationError("--max-buffered-bytes must be at least --max-frame-size (\(maxFrameSize)), or no large frame fits")
        }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level '\(logLevel)'") }
        guard logFormat == "text" || logFormat == "json" else { throw ValidationError("--log-format is text or json, not '\(logFormat)'") }
        if let httpPort, httpPort != "none" {
            guard let number = Int(httpPort), (0...65_535).contains(number) else { throw ValidationError("--http-port is 0...65535 or none, not '\(httpPort)'") }
            guard number == 0 || number != port || httpHost != host else { throw ValidationError("--http-port must differ from --port") }
        }
        guard (1...3_600).contains(httpKeepalive) else { throw ValidationError("--http-keepalive must be 1...3600") }
        if let grpcPort {
            guard (0...65_535).contains(grpcPort) else { throw ValidationError("--grpc-port must be 0...65535") }
            guard grpcPort == 0 || (grpcPort != port && (grpcPort != http?.port || httpHost != host)) else {
                throw ValidationError("--grpc-port must differ from --port and --http-port")
            }
        }
        guard let bytes = ByteSize.parse(mapSizeMax), bytes >= 1 << 20 else {
            throw ValidationError("--map-size-max takes bytes or a size such as 512MiB, 64GiB or 1TiB, at least 1MiB; not '\(mapSizeMax)'")
        }
        guard bootstrap == "copy" || bootstrap == "replay" else { throw ValidationError("--bootstrap is copy or replay, not '\(bootstrap)'") }
        guard Durability(rawValue: durability) != nil else { throw ValidationError("--durability is local or quorum, not '\(durability)'") }
        guard (1...3_600).contains(quorumTimeout) else { throw ValidationError("--quorum-timeout must be 1...3600") }
        guard maxStores >= 1 else { throw ValidationError("--max-stores must be at least 1 (store default)") }
        for address in peers + [follow, advertise].compactMap({ $0 }) {
            do { _ = try serverAddress(address) } catch { throw ValidationError("\(address) is not HOST:PORT") }
        }
        if advertise == nil, port == 0, !peers.isEmpty || follow != nil || coordinator != nil {
            throw ValidationError("a cluster member on --port 0 needs --advertise HOST:PORT")
        }
        if let coordinator {
            do { _ = try EtcdEndpoint.list(parsing: coordinator) } catch { throw ValidationError(error.message) }
            guard let cluster else { throw ValidationError("--coordinator needs --cluster NAME: the cluster's name in etcd, the same on every member") }
            do { try EtcdCoordinator.checkClusterName(cluster) } catch { throw ValidationError(error.message) }
            guard follow == nil else {
                throw ValidationError("--follow and --coordinator do not go together: with a coordinator, its leader key names the leader")
            }
            guard (2...60).contains(leaseTtl ?? 2) else { throw ValidationError("--lease-ttl must be 2...60 seconds") }
            let secure = (try? EtcdEndpoint.list(parsing: coordinator))?.contains(where: \.usesTLS) ?? false
            if !secure, coordinatorCa != nil || coordinatorCert != nil || coordinatorKey != nil {
                throw ValidationError("--coordinator-ca, --coordinator-cert and --coordinator-key are for https:// coordinator URLs; these are http://")
            }
            if advertise == nil, ["0.0.0.0", "::", "[::]"].contains(host) {
                throw ValidationError("a cluster member listening on \(host) needs --advertise HOST:PORT: the address the others reach it at")
            }
        } else if cluster != nil || leaseTtl != nil || coordinatorCa != nil || coordinatorCert != nil || coordinatorKey != nil {
            throw ValidationError("--cluster, --lease-ttl and --coordinator-ca/-cert/-key go with --coordinator")
        }
        guard (coordinatorCert == nil) == (coordinatorKey == nil) else { throw ValidationError("--coordinator-cert and --coordinator-key go together") }
        guard maxTokens >= 0 else { throw ValidationError("--max-tokens must not be negative") }
        guard auth == "tokens" || auth == "none" else { throw ValidationError("--auth is tokens or none, not '\(auth)'") }
        if auth == "none" {
            // Every listener serves the methods: the framed and gRPC ports on --host, the
            // JSON calls on --http-host.
            for (option, address) in [("--host", host), ("--http-host", http == nil ? nil : httpHost)] {
                guard let address, !HostAddress.isLoopback(address) else { continue }
                throw ValidationError(
                    "--auth none lets anyone who reaches the server read and change every store: it is accepted only when every listener is on a loopback address (127.0.0.1, ::1, localhost), and \(option) is \(address). Use tokens (the default) and TLS on a network.")
            }
        }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        if tlsCert == nil, tlsClientCa != nil || tlsCa != nil {
            throw ValidationError("--tls-client-ca and --tls-ca need TLS: give --tls-cert and --tls-key")
        }
        if auth == "tokens", clusterSecretFile == nil, !peers.isEmpty || follow != nil || coordinator != nil {
            throw ValidationError(
                "a cluster member needs --cluster-secret-file FILE (the same file on every member) to prove itself to the others; make one with `openssl rand -hex 32 > FILE`")
        }
    }

    /// The HTTP endpoint's port, and whether it was asked for (`nil`: none).
    private var http: (port: Int, explicit: Bool)? {
        guard let httpPort else {
            // The default port yields to a port the user chose.
            return port == Self.defaultHTTPPort || grpcPort == Self.defaultHTTPPort ? nil : (Self.defaultHTTPPort, false)
        }
        return Int(httpPort).map { ($0, true) }
    }

    /// The id of the data directory `directory` (`member.id`, made the first time): the
    /// coordinator tells a member whose directory changed from one it knew
    /// (docs/REPLICATION.md, "Membership"). Backups and a new follower's copy leave it out.
    static func incarnation(of directory: URL) throws -> String {
        let file = directory.appendingPathComponent("member.id")
        if let text = try? String(contentsOf: file, encoding: .utf8) {
            let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if !id.isEmpty, id.utf8.count <= 64 { return id }
        }
        let id = UUID().uuidString
        try Data((id + "\n").utf8).write(to: file, options: .atomic)
        return id
    }

    /// The HTTP endpoint's port when --http-port is not given.
    static let defaultHTTPPort = 7421

    func run() async throws {
        let format = logFormat
        var logger = Logger(label: "chordstore") { label in
            format == "json" ? JSONLogHandler(label: label) as any LogHandler : StreamLogHandler.standardError(label: label)
        }
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        var limits = WireLimits()
        limits.maxFrameSize = maxFrameSize
        limits.maxConnections = maxConnections
        limits.maxConnectionsPerAddress = maxConnectionsPerAddress
        limits.maxCallsPerConnection = maxCalls
        limits.idleTimeout = .seconds(idleTimeout)
        limits.handshakeTimeout = .seconds(handshakeTimeout)
        limits.frameTimeout = .seconds(frameTimeout)
        limits.maxBufferedBytes = maxBufferedBytes
        limits.maxUnauthenticatedConnections = maxUnauthenticatedConnections
        limits.unauthenticatedTimeout = .seconds(unauthenticatedTimeout)
        limits.maxStreamsPerToken = maxStreamsPerToken
        limits.maxStreamsPerStore = maxStreamsPerStore
        limits.maxLiveQueries = maxLiveQueries
        limits.maxLiveQueriesPerToken = maxLiveQueriesPerToken
        limits.maxLiveQueriesPerStore = maxLiveQueriesPerStore
        limits.maxStreamResets = maxStreamResets

        let http = self.http
        let endpoint = http == nil ? nil : HTTPEndpoint()
        var config = ReplicationConfig(
            node: node, address: advertise ?? "\(host):\(port)", peers: peers.filter { $0 != advertise }, follow: follow,
            parkDirectory: URL(fileURLWithPath: data).appendingPathComponent("parked"))
        config.durability = Durability(rawValue: durability) ?? .local
        config.quorumTimeout = .seconds(quorumTimeout)
        if let coordinator, let cluster {
            do {
                let client = try EtcdClient(
                    endpoints: try EtcdEndpoint.list(parsing: coordinator),
                    tls: EtcdTLS(caFile: coordinatorCa, certificateFile: coordinatorCert, keyFile: coordinatorKey))
                config.coordinator = EtcdCoordinator(client: client, cluster: cluster)
            } catch {
                throw Failure(error)
            }
            config.cluster = cluster
            config.lease = LeaseTiming(ttl: .seconds(leaseTtl ?? 2))
        }
        // Before anything is written there (the admin token first): a directory others
        // may write to is refused.
        do {
            try PrivateDirectory.create(URL(fileURLWithPath: data))
            try PrivateDirectory.checkWritableByOwnerOnly(URL(fileURLWithPath: data))
        } catch {
            throw Failure(error)
        }
        let security: ServerSecurity
        do {
            let clusterSecret = try clusterSecretFile.map { path in
                if SecretFile.isShared(path) { logger.warning("the cluster secret file may be read by other users: chmod 600 it", metadata: ["file": "\(path)"]) }
                return try SecretFile.clusterSecret(at: path)
            }
            var authentication = Authenticator.Mode.none
            var localAdminCreated: Date?
            if auth == "tokens" {
                let (secret, created, date) = try SecretFile.localAdminToken(in: URL(fileURLWithPath: data))
                localAdminCreated = date
                let file = URL(fileURLWithPath: data).appendingPathComponent("admin.token").path
                if SecretFile.isShared(file) { logger.warning("other users may read the admin token file: chmod 600 it", metadata: ["file": "\(file)"]) }
                logger.notice(created ? "wrote this node's admin token" : "this node's admin token", metadata: ["file": "\(file)"])
                authentication = .tokens(localAdmin: secret, clusterSecret: clusterSecret)
            } else {
                logger.warning("authentication is off (--auth none): anyone who can reach \(host):\(port) may do anything")
            }
            let tls = try tlsCert.map { try ServerTLS(certificateFile: $0, keyFile: tlsKey ?? "", clientCAFile: tlsClientCa) }
            var chosen = ServerSecurity(authentication: authentication, tls: tls)
            chosen.localAdminCreated = localAdminCreated
            security = chosen
            config.credentials = ClientCredentials(
                clusterSecret: clusterSecret,
                tls: tls == nil ? nil : try ClientTLS(
                    caFile: tlsCa ?? tlsClientCa, certificateFile: tlsClientCa == nil ? nil : tlsCert,
                    keyFile: tlsClientCa == nil ? nil : tlsKey))
        } catch {
            throw Failure(ChordStoreError(.failedPrecondition, "\(error)"))
        }
        let directory = URL(fileURLWithPath: data)
        var firstLeader = follow
        if let coordinator = config.coordinator, bootstrap == "copy", FollowerBootstrap.isNew(directory) {
            // A new member of a coordinated cluster copies the files of whoever leads now.
            let leader = try? await coordinator.join(initial: config.membership).leader?.address
            firstLeader = leader == config.address ? nil : leader
        }
        if let follow = firstLeader, bootstrap == "copy", FollowerBootstrap.isNew(directory) {
            // Reads are served from the copy's views as soon as they are whole, on the
            // framed port alone, while the log arrives (docs/REPLICATION.md).
            let (fixedConfig, node) = (config, self.node)
            var viewsLogger = logger
            viewsLogger[metadataKey: "serving"] = "the copy's views"
            let serveViews = Server.servingViews(host: host, port: port) { [limits, security, viewsLogger] views in
                Server(
                    store: views, limits: limits, node: node,
                    replication: .receivingLog(config: fixedConfig, store: views, logger: viewsLogger), security: security, logger: viewsLogger)
            }
            do {
                _ = try await FollowerBootstrap.run(
                    leader: follow, into: directory, credentials: config.credentials, logger: logger, serveViews: serveViews)
            } catch {
                logger.warning("cannot copy the leader's files: replaying its log from the start instead", metadata: [
                    "leader": "\(follow)", "error": "\(error)",
                ])
            }
        }
        let store: ChordStore
        do {
            let progressLogger = logger
            let label = liveState ? "opening the store (the log replayed into memory)" : "rebuilding the views"
            let progress = ProgressReporter(label: label, log: { progressLogger.info("\($0)") })
            defer { progress.finish() }
            var options = ChordStore.Options()
            options.maxStores = maxStores
            options.maxTokens = maxTokens
            options.liveState = liveState
            options.liveStateSaveEvents = liveStateSaveEvents ?? options.liveStateSaveEvents
            options.maxStateMemory = stateMemoryBound
            options.restorePointInterval = restorePointInterval.map { .milliseconds(Int($0 * 1_000)) }
            options.maxMapSize = ByteSize.parse(mapSizeMax) ?? options.maxMapSize
            if let endpoint { options.metrics = endpoint.factory }
            let warningLogger = logger
            options.warn = { warningLogger.warning("\($0)") }
            store = try ChordStore.open(at: URL(fileURLWithPath: data), options: options, progress: progress.report)
        } catch {
            throw Failure(error)
        }
        if let recovery = store.viewsRecovery { logger.notice("\(recovery)") }
        if let start = store.liveStateStart { logger.notice("\(start)") }
        if let failure = store.liveStateFailure {
            logger.warning("--live-state: the log cannot be replayed into memory; serving the views, rebuilt up to the damage, instead (run chordstore verify)", metadata: [
                "error": "\(failure)",
            ])
        }
        if config.coordinator != nil {
            do {
                config.incarnation = try Self.incarnation(of: directory)
            } catch {
                store.close()
                throw Failure(ChordStoreError(.failedPrecondition, "cannot read or write \(directory.appendingPathComponent("member.id").path): \(error)"))
            }
        }
        let replication = ReplicationNode(config: config, store: store, logger: logger)
        let server = Server(
            store: store, limits: limits, node: node, replication: replication, security: security, logger: logger,
            metrics: endpoint.map { ServerMetrics(factory: $0.factory) })
        if let exposure = PrivateDirectory.exposure(of: directory) { logger.warning("\(exposure)") }
        if let refusal = store.writeRefusal {
            logger.critical("the store refuses writes; reads are served", metadata: ["reason": "\(refusal)"])
        }
        // A group shuts its services down in reverse order: the listener drains first (the
        // HTTP endpoint then reports not ready), then the HTTP endpoint, replication, and
        // last the store, which commits what is queued and closes the log.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: StoreService(store)),
            .init(service: ReplicationService(replication)),
        ]
        if let endpoint, let http {
            if !HostAddress.isLoopback(httpHost) {
                logger.warning("the HTTP endpoint's metrics and health ask for no credential: anyone who reaches it reads them", metadata: ["http": "\(httpHost):\(http.port)"])
            }
            var policy = Readiness.Policy()
            policy.maxLagEvents = readyMaxLag
            var callLimits = HTTPEndpoint.CallLimits(wire: limits)
            callLimits.keepAlive = .seconds(httpKeepalive)
            callLimits.grace = .seconds(grace)
            let started = OneShotSignal()
            let service = endpoint.service(
                node: NodeReadings(store: store, server: server, replication: replication), host: httpHost, port: http.port,
                policy: policy, callLimits: callLimits, logger: logger,
                onListening: { [logger, httpHost] address in
                    started.fire()
                    let shown = "\(address.ipAddress ?? httpHost):\(address.port ?? http.port)"
                    logger.notice("serving HTTP: the console at http://\(shown)/console/, /api/, /metrics, /health/live, /health/ready", metadata: ["http": "\(shown)"])
                })
            services.append(.init(service: http.explicit ? service : OptionalService(service, started: started, logger: logger, what: "the HTTP endpoint (console, JSON calls, metrics, health) on \(httpHost):\(http.port)")))
        }
        if let grpcPort {
            let tls = tlsCert.map { GRPCEndpoint.TLSFiles(certificateFile: $0, keyFile: tlsKey ?? "", clientCAFile: tlsClientCa) }
            let endpoint = GRPCEndpoint(
                executor: server.callExecutor, host: host, port: grpcPort, tls: tls, limits: limits, grace: .seconds(grace), logger: logger)
            services.append(.init(service: endpoint.service { [logger] address in
                logger.notice("serving gRPC: chordstore.v1.ChordStore, grpc.health.v1.Health, grpc.reflection.v1.ServerReflection", metadata: ["grpc": "\(address)", "tls": "\(tls != nil)"])
            }))
        }
        let (host, port, data) = (self.host, self.port, self.data)
        services.append(.init(service: ServerService(server, host: host, port: port, grace: .seconds(grace)) { [logger] bound in
            let profile = try? store.profile()
            logger.notice("serving", metadata: [
                "data": "\(data)", "address": "\(bound.ipAddress ?? host):\(bound.port ?? port)", "events": "\(profile?.lastSequence ?? 0)",
                "role": "\(replication.roleDescription)", "epoch": "\(store.epoch)",
            ])
        }))
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
        } catch {
            store.close()
            // The ports asked for (not the default HTTP port, which may be taken) tried
            // again, alone: the error of a port that could not be bound may not say which.
            let asked = [("the ChordStore port", host, port)] + (http.flatMap { $0.explicit ? [("the HTTP port", httpHost, $0.port)] : nil } ?? [])
                + (grpcPort.map { [("the gRPC port", host, $0)] } ?? [])
            let failure = ChordStoreError(
                .unavailable,
                "cannot serve on \(host):\(port)\(http.map { " (HTTP on \(httpHost):\($0.port))" } ?? "")\(grpcPort.map { " (gRPC on \(host):\($0))" } ?? ""): "
                    + ListenProbe.describe(error) + (ListenProbe.refusal(asked).map { " (\($0))" } ?? ""))
            logger.critical("cannot serve", metadata: ["error": "\(failure)"])  // in the log's format too (--log-format json)
            throw Failure(failure)
        }
        logger.notice("stopped; the log is closed")
    }
}

extension ServeCommand {
    /// The live state's memory bound: `--max-state-memory`, or half the memory this
    /// process may use; `nil` for `none`.
    var stateMemoryBound: Int? {
        guard let maxStateMemory else { return Self.availableMemory / 2 }
        return maxStateMemory == "none" ? nil : ByteSize.parse(maxStateMemory)
    }

    /// The memory this process may use: the machine's, or its control group's limit if
    /// lower (cgroup v2's `memory.max`, what a container is given).
    static var availableMemory: Int {
        let physical = Int(clamping: ProcessInfo.processInfo.physicalMemory)
        let text = (try? String(contentsOfFile: "/sys/fs/cgroup/memory.max", encoding: .utf8)) ?? "max"
        guard let limit = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), limit > 0 else { return physical }
        return min(physical, limit)
    }
}
