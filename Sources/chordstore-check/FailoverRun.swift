import ChordStoreAPI
import ChordStoreDomain
@_spi(Raw) import ChordStoreClient
import ChordStoreProto
import ChordStoreTesting
import ChordStoreWire
import Foundation
import SwiftProtobuf
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One run of the failover check (``FailoverCheck``).
final class FailoverRun: @unchecked Sendable {
    private let options: FailoverCheck
    private let started = ContinuousClock.now
    private let runID = String(UInt32.random(in: 0 ... .max), radix: 36)
    private let directory: URL
    private let executable: URL
    private let state = Mutex(Shared())
    private var lab: NetworkLab?
    private var etcd: EtcdServer?
    private var cluster: ClusterProcesses?
    /// The cluster secret: the checker asks the members for their status with it.
    private var memberCredentials = ClientCredentials()
    /// An admin token made through the leader: the writers' and the reader's.
    private var writerCredentials = ClientCredentials()

    private struct Shared {
        /// The quorum clients' writes.
        var attempts: [CheckAnalysis.Attempt] = []
        /// The local clients' writes.
        var localAttempts: [CheckAnalysis.Attempt] = []
        var acks: [FailoverAnalysis.Ack] = []
        var failures: [String: Int] = [:]
        var writing = true
    }

    init(_ options: FailoverCheck) throws {
        self.options = options
        executable = options.chordstore.map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("chordstore")
        guard FileManager.default.isExecutableFile(atPath: executable.path) else { throw CheckFailure("no chordstore executable at \(executable.path); give --chordstore") }
        directory = URL(fileURLWithPath: options.dir)
        if let existing = try? FileManager.default.contentsOfDirectory(atPath: directory.path), !existing.isEmpty {
            throw CheckFailure("\(directory.path) is not empty")
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func run() async throws -> FailoverReport {
        var report = FailoverReport()
        defer {
            cluster?.stopAll()
            etcd?.kill()
            lab?.tearDown()
        }
        let skipPartition = try setUpNetwork()
        report.network = lab.map { "namespaces, 10.\($0.subnet).0.0/24" } ?? "loopback"
        try startCluster()
        guard let cluster else { throw CheckFailure("no cluster") }
        let first = try await waitUntilWhole(deadline: .seconds(60))
        try await makeWriterToken(leader: first.leader)
        progress("cluster of \(options.nodes) up on \(report.network), leader \(first.leader) (epoch \(first.epoch)); \(options.clients) quorum and \(options.localClients) local clients writing")
        let writers = Task { await withTaskGroup(of: Void.self) { group in
            for client in 0..<options.clients { group.addTask { await self.write(as: client, local: false) } }
            for client in 0..<options.localClients { group.addTask { await self.write(as: client, local: true) } }
        } }
        for round in 0..<options.rounds {
            guard ContinuousClock.now - started < .seconds(options.maxSeconds) else {
                progress("--max-seconds reached after \(round) rounds")
                break
            }
            let kind = options.kinds[round % options.kinds.count]
            if kind == .partitionLeader, let skipPartition {
                report.rounds.append(.init(kind: kind.rawValue, node: "", epochBefore: 0, epochAfter: 0, failoverMillis: nil, longestGapMillis: 0, skipped: skipPartition))
                continue
            }
            try await Task.sleep(for: .milliseconds(Int(options.writeSeconds * 1_000)))
            let before = try await waitUntilWhole(deadline: .seconds(options.healTimeout))
            report.rounds.append(try await inject(kind, before: before, cluster: cluster, round: round + 1))
        }
        state.withLock { $0.writing = false }
        await writers.value
        progress("writes done; waiting for identical logs")
        let statuses = try await converge()
        return try await finish(report, statuses: statuses)
    }

    // MARK: Setting up

    /// Makes the network namespaces when partitions are asked for and possible; returns
    /// why partition rounds are skipped, if they are.
    private func setUpNetwork() throws -> String? {
        if options.network == "loopback" { return "--network loopback: no partitions" }
        let wanted = options.network == "namespaces" || options.kinds.contains(.partitionLeader)
        guard wanted else { return nil }
        if let reason = NetworkLab.unavailable() {
            if options.network == "namespaces" { throw CheckFailure(reason) }
            progress("partition rounds skipped: \(reason)")
            return reason
        }
        lab = try NetworkLab(runID: runID, nodes: options.nodes)
        return nil
    }

    private func startCluster() throws {
        let etcd = try EtcdServer(host: lab?.hostAddress ?? "127.0.0.1", directory: directory.appendingPathComponent("etcd"))
        self.etcd = etcd
        let secret = directory.appendingPathComponent("cluster.secret")
        let bytes = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0 ... .max)) }.joined()
        _ = FileManager.default.createFile(atPath: secret.path, contents: Data((bytes + "\n").utf8), attributes: [.posixPermissions: 0o600])
        memberCredentials = ClientCredentials(clusterSecret: bytes)
        let ports = lab == nil ? try LoopbackPorts.free(options.nodes) : Array(repeating: 7420, count: options.nodes)
        let addresses = (1...options.nodes).map { node in "\(lab?.address(node) ?? "127.0.0.1"):\(ports[node - 1])" }
        let nodes = (1...options.nodes).map { node in
            let address = addresses[node - 1]
            var arguments = [
                "serve", "--data", directory.appendingPathComponent("n\(node)").path, "--host", lab?.address(node) ?? "127.0.0.1",
                "--port", "\(ports[node - 1])", "--advertise", address, "--node", "n\(node)", "--coordinator", etcd.clientURL,
                "--cluster", "check-\(runID)", "--lease-ttl", "\(options.leaseTtl)", "--durability", "quorum",
                "--cluster-secret-file", secret.path, "--http-port", "none", "--log-level", "notice",
            ]
            for other in addresses where other != address { arguments += ["--peer", other] }
            return ClusterProcesses.Node(name: "n\(node)", address: address, arguments: arguments, launcher: lab?.launcher(node) ?? [])
        }
        let cluster = ClusterProcesses(executable: executable, directory: directory, nodes: nodes)
        self.cluster = cluster
        try cluster.startAll()
    }

    /// An admin token made on the leader with its own admin token (each node writes one
    /// into its data directory): a token in the log works on every member.
    private func makeWriterToken(leader: String) async throws {
        guard let name = cluster?.name(at: leader) else { throw CheckFailure("no node at \(leader)") }
        let file = directory.appendingPathComponent(name).appendingPathComponent("admin.token")
        guard let local = try? String(contentsOf: file, encoding: .utf8).split(separator: "\n").first.map(String.init) else {
            throw CheckFailure("cannot read \(file.path)")
        }
        guard let client = Client(address: leader, credentials: ClientCredentials(token: local)) else { throw CheckFailure("bad address \(leader)") }
        defer { Task { await client.close() } }
        let created = try await client.call(.createToken, Chordstore_V1_CreateTokenRequest.with { $0.role = .admin }, timeout: .seconds(10), as: Chordstore_V1_CreatedToken.self)
        writerCredentials = ClientCredentials(token: created.secret)
    }

    // MARK: Writing

    private func write(as client: Int, local: Bool) async {
        var retry = Client.RetryPolicy()
        retry.failover = .seconds(30)
        guard let cluster, let connection = Client(servers: cluster.addresses, retry: retry, credentials: writerCredentials) else { return }
        defer { Task { await connection.close() } }
        var index = 0
        while state.withLock({ $0.writing }), ContinuousClock.now - started < .seconds(options.maxSeconds) {
            let title = "fo-\(runID)-\(local ? "l" : "c")\(client)-\(index)"
            var acked: UInt64?
            do {
                let event = try await connection.execute(
                    .addChordset(AddChordset(title: title)),
                    options: WriteOptions(commandID: title, durability: local ? .local : .quorum, timeout: .seconds(5)))
                acked = event.sequence
                let micros = event.timestamp.microsecondsSince1970
                let ack = FailoverAnalysis.Ack(epoch: event.epoch, committedMicros: micros, ackedMillis: elapsedMillis())
                state.withLock { $0.acks.append(ack) }
            } catch {
                let code = error.code.description
                state.withLock { $0.failures[code, default: 0] += 1 }
            }
            let attempt = CheckAnalysis.Attempt(client: client, index: index, title: title, acked: acked)
            state.withLock { local ? $0.localAttempts.append(attempt) : $0.attempts.append(attempt) }
            index += 1
            if options.paceMs > 0 { try? await Task.sleep(for: .milliseconds(options.paceMs)) }
        }
    }

    // MARK: Faults

    private func inject(_ kind: FailoverCheck.Kind, before: (leader: String, epoch: UInt64), cluster: ClusterProcesses, round: Int) async throws -> FailoverReport.Round {
        guard let leaderName = cluster.name(at: before.leader) else { throw CheckFailure("no node at \(before.leader)") }
        let follower = cluster.names.first { $0 != leaderName } ?? leaderName
        let target = kind == .killFollower ? follower : kind == .restartEtcd ? "etcd" : leaderName
        let windowStart = elapsedMillis() - options.writeSeconds * 1_000
        let fault = elapsedMillis()
        progress("round \(round): \(kind.rawValue) \(target) (leader \(leaderName), epoch \(before.epoch))")
        let pastLease = Duration.seconds(options.leaseTtl * 2)
        switch kind {
        case .killLeader:
            try cluster.signal([leaderName], SIGKILL)
            await waitForFailover(after: fault, epoch: before.epoch)
            try cluster.start(leaderName)
        case .stopLeader:
            try cluster.signal([leaderName], SIGSTOP)
            await waitForFailover(after: fault, epoch: before.epoch)
            try await sleep(until: fault, plus: pastLease)
            try cluster.signal([leaderName], SIGCONT)
        case .killFollower:
            try cluster.signal([follower], SIGKILL)
            try await Task.sleep(for: .seconds(2))
            try cluster.start(follower)
        case .restartEtcd:
            etcd?.kill()
            try await Task.sleep(for: .seconds(1))
            try etcd?.start()
        case .partitionLeader:
            guard let lab, let node = Int(leaderName.dropFirst()) else { throw CheckFailure("no network lab") }
            try lab.cut(node)
            await waitForFailover(after: fault, epoch: before.epoch)
            try await sleep(until: fault, plus: pastLease)
            try lab.heal(node)
        }
        let after = try await waitUntilWhole(deadline: .seconds(options.healTimeout))
        let acks = state.withLock { $0.acks }
        var outcome = FailoverReport.Round(
            kind: kind.rawValue, node: target, epochBefore: before.epoch, epochAfter: after.epoch, failoverMillis: nil,
            longestGapMillis: Self.longestGap(acks, from: windowStart, to: elapsedMillis()), skipped: nil)
        if kind != .killFollower, kind != .restartEtcd {
            outcome.failoverMillis = FailoverAnalysis.failoverMillis(faultMillis: fault, epochBefore: before.epoch, acks: acks)
        }
        progress("round \(round): \(outcome.failoverMillis.map { String(format: "failover %.0f ms, ", $0) } ?? "")longest gap \(String(format: "%.0f", outcome.longestGapMillis)) ms; leader \(after.leader), epoch \(after.epoch)")
        return outcome
    }

    /// Waits (at most 30 s) until a write of an epoch newer than `epoch` is acknowledged.
    private func waitForFailover(after fault: Double, epoch: UInt64) async {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if state.withLock({ $0.acks.contains { $0.epoch > epoch && $0.ackedMillis >= fault } }) { return }
            try? await Task.sleep(for: .milliseconds(20))
        }
        progress("no write of an epoch after \(epoch) was acknowledged within 30 s of the fault")
    }

    private func sleep(until fault: Double, plus duration: Duration) async throws {
        let remaining = Double(duration / .milliseconds(1)) - (elapsedMillis() - fault)
        if remaining > 0 { try await Task.sleep(for: .milliseconds(Int(remaining))) }
    }

    /// The longest time between two acknowledgements (or a window's edge) in the window.
    static func longestGap(_ acks: [FailoverAnalysis.Ack], from start: Double, to end: Double) -> Double {
        var times = acks.map(\.ackedMillis).filter { $0 >= start && $0 <= end }.sorted()
        times = [start] + times + [end]
        return zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? 0
    }

    // MARK: The cluster's state

    private func statusClient() -> Client? {
        guard let cluster else { return nil }
        var retry = Client.RetryPolicy()
        retry.failover = .seconds(5)
        return Client(servers: cluster.addresses, retry: retry, credentials: memberCredentials)
    }

    /// Waits until one member leads and every member answers, in the leader's epoch,
    /// caught up within a few thousand events; returns the leader and its epoch.
    private func waitUntilWhole(deadline limit: Duration) async throws -> (leader: String, epoch: UInt64) {
        let deadline = ContinuousClock.now + limit
        guard let client = statusClient() else { throw CheckFailure("no cluster") }
        defer { Task { await client.close() } }
        var last = "no answer"
        while ContinuousClock.now < deadline {
            if let status = try? await client.call(.getClusterStatus, Chordstore_V1_ClusterStatusRequest(), timeout: .seconds(3), as: Chordstore_V1_ClusterStatus.self) {
                let leaderSequence = status.members.first { $0.address == status.leader }?.status.lastSequence ?? 0
                let whole = !status.leader.isEmpty && status.members.count == options.nodes && status.members.allSatisfy {
                    $0.reachable && $0.status.epoch == status.epoch && $0.status.lastSequence + 5_000 >= leaderSequence
                        && ($0.address == status.leader) == ($0.status.role == "leader")
                }
                if whole { return (status.leader, status.epoch) }
                last = "leader '\(status.leader)', epoch \(status.epoch), members " + status.members.map {
                    "\($0.address)=\($0.reachable ? "\($0.status.role)/\($0.status.epoch)/\($0.status.lastSequence)" : "unreachable")"
                }.joined(separator: " ")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw CheckFailure("the cluster was not whole within \(limit): \(last) (logs in \(directory.path))")
    }

    /// Waits until every member holds the same log; returns their statuses.
    private func converge() async throws -> [String: Chordstore_V1_NodeStatus] {
        let deadline = ContinuousClock.now + .seconds(options.healTimeout)
        var statuses: [String: Chordstore_V1_NodeStatus] = [:]
        guard let cluster else { return statuses }
        while ContinuousClock.now < deadline {
            statuses = [:]
            for name in cluster.names {
                guard let address = cluster.address(name), let client = Client(address: address, retry: .once, credentials: memberCredentials) else { continue }
                statuses[name] = try? await client.call(.getNodeStatus, Chordstore_V1_NodeStatusRequest(), timeout: .seconds(2), as: Chordstore_V1_NodeStatus.self)
                await client.close()
            }
            let heads = Set(statuses.values.map { "\($0.lastSequence)/\($0.lastChecksum)" })
            if statuses.count == options.nodes, heads.count == 1, statuses.values.filter({ $0.role == "leader" }).count == 1 { return statuses }
            try await Task.sleep(for: .milliseconds(200))
        }
        progress("the logs did not agree within \(options.healTimeout) s")
        return statuses
    }

    // MARK: The verdict

    private func finish(_ partial: FailoverReport, statuses: [String: Chordstore_V1_NodeStatus]) async throws -> FailoverReport {
        var report = partial
        let shared = state.withLock { $0 }
        report.attempted = shared.attempts.count
        report.acknowledged = shared.attempts.count { $0.acked != nil }
        report.failed = report.attempted - report.acknowledged
        report.failures = shared.failures
        let heads = Set(statuses.values.map { "\($0.lastSequence)/\($0.lastChecksum)" })
        report.logsIdentical = statuses.count == options.nodes && heads.count == 1
        report.parkedEvents = statuses.values.map(\.parkedEvents).reduce(0, +)
        let source = statuses.first { $0.value.role == "leader" }?.value.address ?? cluster?.addresses.first ?? ""
        let log = try await readTitles(from: source)
        report.logEvents = Int(statuses.values.first?.lastSequence ?? 0)
        // Local writes are judged only for split brains (below) and counted when lost; for
        // the rest they are writes that may or may not be in the log.
        let localUnjudged = shared.localAttempts.map { CheckAnalysis.Attempt(client: -1 - $0.client, index: $0.index, title: $0.title, acked: nil) }
        let analysis = CheckAnalysis.analyze(attempts: shared.attempts + localUnjudged, log: log)
        let logged = Set(log.map(\.title))
        report.localAcknowledged = shared.localAttempts.count { $0.acked != nil }
        report.localLost = shared.localAttempts.count { $0.acked != nil && !logged.contains($0.title) }
        report.lost = analysis.lost.count
        report.duplicated = analysis.duplicated.count
        report.unexpected = analysis.unexpected.count
        report.outOfOrder = analysis.outOfOrder.count
        report.misplaced = analysis.misplaced.count
        report.examples = analysis.examples(10)
        report.splitBrains = FailoverAnalysis.splitBrains(shared.acks)
        let kills = report.rounds.filter { $0.kind == FailoverCheck.Kind.killLeader.rawValue }.compactMap(\.failoverMillis)
        let all = report.rounds.compactMap(\.failoverMillis)
        if let kill = FailoverAnalysis.medianAndMax(kills) { (report.killFailoverMedianMillis, report.killFailoverMaxMillis) = kill }
        if let every = FailoverAnalysis.medianAndMax(all) { (report.failoverMedianMillis, report.failoverMaxMillis) = every }
        report.seconds = elapsedMillis() / 1_000
        return report
    }

    /// The titles of this run's added chordsets, with their sequence numbers, in log order.
    private func readTitles(from address: String) async throws -> [(sequence: UInt64, title: String)] {
        guard let client = Client(address: address, credentials: writerCredentials) else { throw CheckFailure("no node at \(address)") }
        defer { Task { await client.close() } }
        var titles: [(sequence: UInt64, title: String)] = []
        let prefix = "fo-\(runID)-"
        for try await envelope in try await client.stream(.readLog, Chordstore_V1_ReadLogRequest(), as: Chordstore_V1_EventEnvelope.self) {
            if case .chordsetAdded(let added)? = envelope.event, added.chordset.title.hasPrefix(prefix) {
                titles.append((envelope.sequence, added.chordset.title))
            }
        }
        return titles
    }

    private func elapsedMillis() -> Double { Double((ContinuousClock.now - started) / .microseconds(1)) / 1_000 }

    private func progress(_ line: String) {
        FileHandle.standardError.write(Data(String(format: "[%7.2f s] %@\n", elapsedMillis() / 1_000, line).utf8))
    }
}
