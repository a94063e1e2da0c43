import ArgumentParser
import ChordStoreClient
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `chordstore-check`: starts a cluster, writes through it while injecting faults, heals
/// it, and reports what the log lost, duplicated, invented or reordered: faults on a
/// schedule of writes in a manual cluster (the default), or rounds of faults in a cluster
/// that fails over by itself (`failover`).
@main
struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chordstore-check",
        abstract: "Check a replicated ChordStore cluster under faults: lost, duplicated, unexpected and reordered writes.",
        subcommands: [ScheduledCheck.self, FailoverCheck.self],
        defaultSubcommand: ScheduledCheck.self)
}

/// `chordstore-check [scheduled]`: a manual cluster (`--follow`, `promote`) with faults
/// at given numbers of writes.
struct ScheduledCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scheduled",
        abstract: "A manual cluster (--follow, promote) with faults at given numbers of writes.",
        discussion: """
            Starts --nodes `chordstore serve` processes on 127.0.0.1 (n1 leads, the others
            follow it; data and logs in --dir), runs --clients concurrent clients that each
            add chordsets with unique titles one at a time until --writes were attempted,
            and injects each --fault once that many writes were attempted:

              AT:kill:NODE     SIGKILL          AT:stop:NODE   SIGSTOP
              AT:restart:NODE  start it again   AT:cont:NODE   SIGCONT
              AT:promote:NODE  promote it (best: the live follower furthest ahead)
                               and send the clients to it
            NODE may list several nodes, comma-separated, hit at once (e.g. 300:kill:n2,n3).

            Then it heals (continues stopped nodes, restarts dead ones), waits until every
            log ends at the same event with the same checksum (a hash of the whole log),
            reads the log back and reports, as JSON on standard output:
              lost        acknowledged writes missing from the log
              duplicated  titles present more than once
              unexpected  titles nobody attempted
              out_of_order  one client's acknowledged writes in another order
              misplaced   acknowledged writes at another sequence number than acknowledged
            A failed write (no acknowledgement) may or may not be in the log; it is
            counted, not judged. Exit status 0 when nothing is wrong and the logs are
            identical, 1 otherwise, 2 when the check itself could not run.
            """)

    @Option(help: "The chordstore executable (default: next to this one).") var chordstore: String?
    @Option(help: "Directory for the nodes' data and logs (created; must be empty or absent).") var dir: String
    @Option(help: "Nodes in the cluster.") var nodes = 3
    @Option(help: "Writes to attempt in all.") var writes = 2_000
    @Option(help: "Concurrent clients.") var clients = 8
    @Option(help: "Durability asked of each write: local or quorum.") var durability = "quorum"
    @Option(help: "Deadline of each write, in milliseconds.") var timeoutMs = 2_000
    @Option(name: .customLong("fault"), help: ArgumentHelp("A fault to inject (repeatable).", valueName: "AT:ACTION:NODE"))
    var faultTexts: [String] = []
    @Option(help: "Seconds to wait for the healed cluster's logs to agree.") var healTimeout = 60
    @Option(help: "Seconds the whole run may take before it gives up.") var maxSeconds = 600

    func validate() throws {
        guard (1...9).contains(nodes) else { throw ValidationError("--nodes must be 1...9") }
        guard (1...1_000_000).contains(writes), (1...256).contains(clients) else { throw ValidationError("--writes 1...1000000, --clients 1...256") }
        guard ["local", "quorum"].contains(durability) else { throw ValidationError("--durability is local or quorum") }
        guard timeoutMs >= 10, healTimeout >= 1, maxSeconds >= 10 else { throw ValidationError("--timeout-ms ≥ 10, --heal-timeout ≥ 1, --max-seconds ≥ 10") }
        for text in faultTexts {
            do { _ = try Fault(parsing: text) } catch { throw ValidationError("\(error)") }
        }
    }

    func run() async throws {
        try await CheckFailure.reporting {
            let report = try await CheckRun(self).run()
            return (report, report.passed)
        }
    }
}
