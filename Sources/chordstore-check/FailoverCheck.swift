import ArgumentParser
import Foundation

/// `chordstore-check failover`: a cluster on etcd, under rounds of faults, while clients
/// write with quorum acknowledgement; then what was lost and whether two leaders overlapped.
struct FailoverCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "failover",
        abstract: "A cluster that fails over by itself (serve --coordinator) under rounds of faults.",
        discussion: """
            Starts its own etcd and --nodes `chordstore serve --coordinator` members (data,
            etcd and logs in --dir), and --clients clients that each add chordsets with
            unique titles, one at a time, with quorum durability and a command id, through
            the Swift client given every member's address (it follows the leader), and
            --local-clients more that write with local durability (acknowledged at the
            leader's fsync: what the leader's lease guards, and the split-brain check
            judges; such a write the new leader lacks is counted as local_lost, which is
            what local means, not an anomaly). Then
            --rounds rounds, each: --write-seconds of writes, one fault, healing, and a
            wait until the cluster is whole again. The faults, taken in turn from --faults:

              kill-leader       SIGKILL the leader; restart it once another leads
              stop-leader       SIGSTOP the leader for twice its lease, then SIGCONT
              kill-follower     SIGKILL a follower; restart it 2 s later
              restart-etcd      SIGKILL etcd; start it again (same data) 1 s later
              partition-leader  cut the leader off the network for twice its lease, then
                                heal (network namespaces and veth pairs: root only;
                                skipped with a message elsewhere)

            With partitions possible (--network auto as root, or namespaces), every node
            runs in a namespace of its own; otherwise on 127.0.0.1. After the last round
            the writes stop, the logs must become identical, and the report (JSON on
            standard output) gives for each round the failover time (the fault to the
            first acknowledged write of a newer epoch) and the longest time without an
            acknowledged write; the median and largest failover time, after kill-leader
            and over all faults of the leader; lost, duplicated, unexpected, out-of-order
            and misplaced writes as `chordstore-check` judges them (of the quorum writes);
            and split_brains: pairs of epochs whose acknowledged writes (local ones
            included) were committed in overlapping spans of time. Exit status 0 when nothing is wrong, 1 otherwise, 2 when the check
            could not run.
            """)

    /// The faults, by name.
    enum Kind: String, CaseIterable, Codable {
        case killLeader = "kill-leader"
        case stopLeader = "stop-leader"
        case killFollower = "kill-follower"
        case restartEtcd = "restart-etcd"
        case partitionLeader = "partition-leader"
    }

    @Option(help: "The chordstore executable (default: next to this one).") var chordstore: String?
    @Option(help: "Directory for the nodes' data, etcd's and the logs (created; must be empty or absent).") var dir: String
    @Option(help: "Members of the cluster.") var nodes = 3
    @Option(help: "Rounds of one fault each.") var rounds = 5
    @Option(help: ArgumentHelp("The faults, taken in turn (comma-separated).", valueName: "KIND,...")) var faults = Kind.allCases.map(\.rawValue).joined(separator: ",")
    @Option(help: "Concurrent clients writing with quorum durability.") var clients = 4
    @Option(help: "Concurrent clients writing with local durability.") var localClients = 1
    @Option(help: "Seconds of writes before each fault.") var writeSeconds = 2.0
    @Option(help: "Milliseconds each client waits between its writes (0: none; the load of a test run beside others).")
    var paceMs = 0
    @Option(help: "The members' --lease-ttl, in seconds.") var leaseTtl = 2
    @Option(help: ArgumentHelp("Where the members run: auto (namespaces when root), namespaces, or loopback (no partitions).", valueName: "MODE"))
    var network = "auto"
    @Option(help: "Seconds the cluster may take to become whole after a fault, and its logs identical at the end.") var healTimeout = 60
    @Option(help: "Seconds the whole run may take before it gives up.") var maxSeconds = 1_800

    var kinds: [Kind] { faults.split(separator: ",").compactMap { Kind(rawValue: String($0)) } }

    func validate() throws {
        guard (3...7).contains(nodes) else { throw ValidationError("--nodes must be 3...7") }
        guard (1...10_000).contains(rounds), (1...64).contains(clients), (0...64).contains(localClients) else {
            throw ValidationError("--rounds 1...10000, --clients 1...64, --local-clients 0...64")
        }
        let names = faults.split(separator: ",").map(String.init)
        guard !names.isEmpty, names.allSatisfy({ Kind(rawValue: $0) != nil }) else {
            throw ValidationError("--faults takes a comma-separated list of \(Kind.allCases.map(\.rawValue).joined(separator: ", ")), not '\(faults)'")
        }
        guard writeSeconds >= 0.2, (2...60).contains(leaseTtl), healTimeout >= 5, maxSeconds >= 30, (0...10_000).contains(paceMs) else {
            throw ValidationError("--write-seconds ≥ 0.2, --lease-ttl 2...60, --heal-timeout ≥ 5, --max-seconds ≥ 30, --pace-ms 0...10000")
        }
        guard ["auto", "namespaces", "loopback"].contains(network) else { throw ValidationError("--network is auto, namespaces or loopback") }
    }

    func run() async throws {
        try await CheckFailure.reporting {
            let report = try await FailoverRun(self).run()
            return (report, report.passed)
        }
    }
}
