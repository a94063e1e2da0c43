import ChordStoreClient
import ChordStoreTesting
@testable import chordstore_check
import Foundation
import Synchronization
import TestSupport
import Testing

/// Clusters that fail over by themselves (`serve --coordinator`), driven as an operator
/// would: an etcd of the test's own, `chordstore serve` processes on loopback ports, and
/// the `chordstore` verbs with `--server a,b,c`.
@Suite("Automatic failover", .serialized)
struct CoordinatedClusterTests {
    /// etcd and `count` members on loopback, each naming the others as peers (the first
    /// to start creates the member list from them); `extra` more planned outside it, not
    /// started (one started before the list exists would create it), their ports held
    /// until ``startPlanned(_:)``. The processes are chordstore-check's
    /// (`ClusterProcesses`), their logs in `directory`.
    struct Cluster {
        let etcd: EtcdServer
        let processes: ClusterProcesses
        let directory: URL
        /// The planned members' ports, held by a listener each until they start: another
        /// process choosing free ports (a checker, a bench the suite runs) cannot take one
        /// meanwhile, as it once did (the fourth member then could not listen).
        let held: HeldPorts

        final class HeldPorts: Sendable {
            let listeners: Mutex<[String: LoopbackListener]>
            init(_ listeners: [String: LoopbackListener]) { self.listeners = Mutex(listeners) }
        }

        static func start(count: Int = 3, extra: Int = 0) async throws -> Cluster {
            let etcd = try await EtcdServer.start()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coordinated-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let ports = try LoopbackPorts.free(count + extra)
            let addresses = ports.map { "127.0.0.1:\($0)" }
            let nodes = (0..<(count + extra)).map { index in
                var arguments = [
                    "serve", "--data", directory.appendingPathComponent("n\(index + 1)").path, "--port", "\(ports[index])",
                    "--advertise", addresses[index], "--node", "n\(index + 1)", "--coordinator", etcd.clientURL, "--cluster", "test",
                    "--auth", "none", "--http-port", "none", "--durability", "quorum", "--log-level", "info",
                    // A loaded test machine may stall a member for a second: a longer lease keeps it from flapping.
                    "--lease-ttl", "4",
                ]
                for (other, address) in addresses.prefix(count).enumerated() where other != index { arguments += ["--peer", address] }
                return ClusterProcesses.Node(name: "n\(index + 1)", address: addresses[index], arguments: arguments)
            }
            var held: [String: LoopbackListener] = [:]
            for index in count..<(count + extra) { held[nodes[index].name] = try LoopbackListener(port: ports[index]) }
            let processes = ClusterProcesses(executable: try chordstoreExecutable(), directory: directory, nodes: nodes)
            try await offPool { for node in nodes.prefix(count) { try processes.start(node.name) } }
            return Cluster(etcd: etcd, processes: processes, directory: directory, held: HeldPorts(held))
        }

        /// Starts a planned member, letting go of its port first.
        func startPlanned(_ name: String) async throws {
            _ = held.listeners.withLock { $0.removeValue(forKey: name) }
            try await offPool { [processes] in try processes.start(name) }
        }

        var servers: String { processes.addresses.prefix(3).joined(separator: ",") }

        /// Stops the members (SIGTERM, then SIGKILL after 10 s) and etcd, off the pool.
        func stop() async {
            _ = try? await offPool { [processes, etcd, directory] in
                processes.stopAll()
                etcd.kill()
                try? FileManager.default.removeItem(at: directory)
            }
        }

        func log(_ name: String) -> String {
            (try? String(contentsOf: directory.appendingPathComponent("\(name).log"), encoding: .utf8)) ?? ""
        }

        var logs: String { processes.names.map { "== \($0)\n\(log($0).suffix(3_000))" }.joined(separator: "\n") }
    }

    /// What `cluster status --json` says.
    struct Status: Decodable {
        struct Member: Decodable {
            var address: String
            var reachable: Bool?
            var status: Node?
        }
        struct Node: Decodable {
            var role: String?
            var epoch: String?
            var lastSequence: String?
            var learner: Bool?
        }
        var leader: String?
        var epoch: String?
        var members: [Member]?
        var learners: [String]?
        var coordinated: Bool?

        var epochNumber: UInt64 { UInt64(epoch ?? "0") ?? 0 }
    }

    func status(_ servers: String) async throws -> Status? {
        try await statusOrError(servers).status
    }

    /// What `cluster status --json` says, or the CLI's complaint when it fails.
    func statusOrError(_ servers: String) async throws -> (status: Status?, error: String?) {
        let result = try await runChordstore(["--server", servers, "--json", "cluster", "status"], timeout: 30)
        guard result.status == 0, let data = result.stdout.data(using: .utf8) else { return (nil, "exit \(result.status): \(result.stderr)") }
        return (try JSONDecoder().decode(Status.self, from: data), nil)
    }

    /// Polls `cluster status` until `done` holds (at most `seconds`); on timeout the error
    /// carries the last status and the tail of each member's log.
    func waitFor(_ cluster: Cluster, seconds: Double = 60, _ what: String, _ done: (Status) -> Bool) async throws -> Status {
        let deadline = Date().addingTimeInterval(seconds)
        var last: Status?
        var failures = 0
        var lastFailure: String?
        while Date() < deadline {
            let answer = try await statusOrError(cluster.servers)
            if let status = answer.status {
                last = status
                if done(status) { return status }
            } else {
                failures += 1
                lastFailure = answer.error
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw ChildProcessError(message: """
            no \(what) within \(seconds) s; last status: \(String(describing: last)); \(failures) calls failed, the last with \(lastFailure ?? "-")
            \(cluster.logs)
            """)
    }

    /// One member leads (the key's holder, done with its takeover), and every member
    /// answers in its epoch.
    func wholeWithLeader(_ status: Status) -> Bool {
        guard let leader = status.leader, !leader.isEmpty, let members = status.members else { return false }
        return members.allSatisfy {
            $0.reachable == true && $0.status?.epoch == status.epoch && ($0.address == leader) == ($0.status?.role == "leader")
        }
    }

    @Test("three members elect one leader; kill -9 it: another takes over with a higher epoch and takes writes through --server a,b,c; the old one rejoins with every acknowledged chordset")
    func killTheLeader() async throws {
        let cluster = try await Cluster.start()
        defer { Task { await cluster.stop() } }
        let first = try await waitFor(cluster, "leader of a whole cluster", wholeWithLeader)
        #expect(first.coordinated == true)
        #expect(first.members?.filter { $0.status?.role == "leader" }.count == 1)
        for title in ["Verse", "Chorus", "Bridge"] {
            let added = try await runChordstore(["--server", cluster.servers, "add", title], timeout: 60)
            #expect(added.status == 0, "\(added.stderr)")
        }
        let leaderAddress = try #require(first.leader)
        let leader = try #require(cluster.processes.name(at: leaderAddress))
        try await offPool { try cluster.processes.signal([leader], SIGKILL) }
        let began = Date()
        let after = try await runChordstore(["--server", cluster.servers, "add", "After the kill"], timeout: 60)
        #expect(after.status == 0, "\(after.stderr)\n\(cluster.logs)")
        let failover = Date().timeIntervalSince(began)
        #expect(failover < 30)
        let second = try await waitFor(cluster, "new leader") { ($0.leader ?? "").isEmpty == false && $0.leader != first.leader }
        #expect(second.epochNumber > first.epochNumber)
        try await offPool { try cluster.processes.start(leader) }
        _ = try await waitFor(cluster, "whole cluster again", wholeWithLeader)
        let list = try await runChordstore(["--server", leaderAddress, "list"], timeout: 30)
        for title in ["Verse", "Chorus", "Bridge", "After the kill"] { #expect(list.stdout.contains(title), "\(list.stdout)") }
        #expect(cluster.log(leader).contains("following"))
    }

    @Test("a fourth node follows without voting until added; removing the leader hands leadership over and writes go on")
    func membership() async throws {
        let cluster = try await Cluster.start(count: 3, extra: 1)
        defer { Task { await cluster.stop() } }
        let fourth = try #require(cluster.processes.address("n4"))
        let first = try await waitFor(cluster, "leader of a whole cluster", wholeWithLeader)
        #expect(first.members?.count == 3)
        try await cluster.startPlanned("n4")
        _ = try await waitFor(cluster, "the fourth node as a learner") { ($0.learners ?? []).contains(fourth) }
        // A node that is not running is refused at once, and so is another name of a member.
        let absent = try await runChordstore(["--server", cluster.servers, "cluster", "add", "127.0.0.1:9"], timeout: 60)
        #expect(absent.status != 0 && absent.stderr.contains("is not following this leader"), "\(absent.stderr)")
        let alias = try await runChordstore(["--server", cluster.servers, "cluster", "add", (first.leader ?? "").replacingOccurrences(of: "127.0.0.1", with: "localhost")], timeout: 60)
        #expect(alias.status != 0 && alias.stderr.contains("by another name"), "\(alias.stderr)")
        let added = try await runChordstore(["--server", cluster.servers, "cluster", "add", fourth], timeout: 60)
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.contains("4 members, a quorum is 3"), "\(added.stdout)")
        let bigger = try await waitFor(cluster, "four members") { ($0.members ?? []).count == 4 && wholeWithLeader($0) }
        let leader = try #require(bigger.leader)
        let removed = try await runChordstore(["--server", cluster.servers, "cluster", "remove", leader], timeout: 60)
        #expect(removed.status == 0, "\(removed.stderr)\n\(cluster.logs)")
        let handed = try await waitFor(cluster, "a new leader after the handover") {
            ($0.members ?? []).count == 3 && ($0.leader ?? "").isEmpty == false && $0.leader != leader && wholeWithLeader($0)
        }
        #expect(!(handed.members ?? []).contains { $0.address == leader })
        let write = try await runChordstore(["--server", cluster.servers, "add", "After the handover"], timeout: 60)
        #expect(write.status == 0, "\(write.stderr)")
        let former = try #require(cluster.processes.name(at: leader))
        #expect(cluster.log(former).contains("gave the leader key up"))
    }

    @Test("a member whose data directory is lost and started again does not vouch: a stale member cannot lead with it, and no acknowledged write is lost")
    func wipedMemberDoesNotVouch() async throws {
        let cluster = try await Cluster.start()
        defer { Task { await cluster.stop() } }
        let first = try await waitFor(cluster, "leader of a whole cluster", wholeWithLeader)
        let leader = try #require(cluster.processes.name(at: first.leader ?? ""))
        let names = cluster.processes.names.prefix(3)
        let stale = try #require(names.first { $0 != leader })
        let other = try #require(names.first { $0 != leader && $0 != stale })
        try await offPool { try cluster.processes.signal([stale], SIGSTOP) }
        for title in ["Kept one", "Kept two"] {
            let added = try await runChordstore(["--server", cluster.servers, "add", title], timeout: 60)
            #expect(added.status == 0, "\(added.stderr)")
        }
        // Both copies of the acknowledged writes go: the leader stops, the other member's
        // data directory is lost and it starts again empty; the stale member resumes.
        try await offPool { try cluster.processes.signal([leader, other], SIGKILL) }
        try FileManager.default.removeItem(at: cluster.directory.appendingPathComponent(other))
        try await offPool {
            try cluster.processes.start(other)
            try cluster.processes.signal([stale], SIGCONT)
        }
        // The stale member and the empty one are two of three, but the empty one cannot
        // vouch: no member leads for as long as the member holding the writes is away.
        // (The stale member may hold the leader key for a moment at each attempt, before
        // its takeover is refused: `leader` can name it; its role never says leader.)
        try await Task.sleep(for: .seconds(12))
        let leaderless = try await status(cluster.servers)
        let leading = leaderless?.members?.filter { $0.status?.role == "leader" }.map(\.address) ?? []
        #expect(leading.isEmpty, "\(String(describing: leaderless))\n\(cluster.logs)")
        try await offPool { try cluster.processes.start(leader) }
        _ = try await waitFor(cluster, "whole cluster again", wholeWithLeader)
        for name in names {
            let address = try #require(cluster.processes.address(name))
            let list = try await runChordstore(["--server", address, "list"], timeout: 30)
            for title in ["Kept one", "Kept two"] { #expect(list.stdout.contains(title), "\(name): \(list.stdout)") }
        }
    }

    @Test("chordstore-check failover: a round of each fault (kill, freeze and cut off the leader, kill a follower, restart etcd), with quorum and local writes: no quorum write lost, no two leaders taking writes at once")
    func faultRounds() async throws {
        let executable = try chordstoreExecutable().deletingLastPathComponent().appendingPathComponent("chordstore-check")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("failover-check-\(UUID().uuidString)")
        let result = try await offPool {
            // Paced writers: the other suites share the machine's two cores meanwhile.
            try runExecutable(executable, [
                "failover", "--dir", directory.path, "--rounds", "5", "--lease-ttl", "3", "--clients", "2", "--local-clients", "1",
                "--pace-ms", "5", "--max-seconds", "600",
            ], timeout: 700)
        }
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)\n\(ReplicationClusterTests.logTails(directory))")
        if result.status == 0 { try? FileManager.default.removeItem(at: directory) }
        struct Report: Decodable {
            struct Round: Decodable {
                var kind: String
                var failoverMillis: Double?
                var skipped: String?
            }
            var rounds: [Round]
            var acknowledged: Int
            var localAcknowledged: Int
            var lost: Int
            var duplicated: Int
            var unexpected: Int
            var splitBrains: [[String: Int64]]
            var logsIdentical: Bool
        }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let report = try decoder.decode(Report.self, from: Data(result.stdout.utf8))
        #expect(report.rounds.map(\.kind) == ["kill-leader", "stop-leader", "kill-follower", "restart-etcd", "partition-leader"])
        #expect(report.acknowledged > 0 && report.lost == 0 && report.duplicated == 0 && report.unexpected == 0)
        #expect(report.localAcknowledged > 0)
        #expect(report.splitBrains.isEmpty && report.logsIdentical)
        for round in report.rounds where round.kind.hasSuffix("leader") && round.skipped == nil { #expect(round.failoverMillis != nil) }
        // Where this machine can make network namespaces, the partition round must have run.
        if NetworkLab.unavailable() == nil {
            #expect(report.rounds.last?.skipped == nil, "the partition round was skipped: \(report.rounds.last?.skipped ?? "")")
        }
    }
}
