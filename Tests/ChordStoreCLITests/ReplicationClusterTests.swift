import Foundation
import TestSupport
import Testing

/// Replication across processes, driven by `chordstore-check` (the same tool an operator
/// runs): three `chordstore serve` processes on 127.0.0.1, concurrent clients writing
/// unique values, faults on a schedule, healing, and the verdict read from its JSON.
@Suite("Replication across processes", .serialized)
struct ReplicationClusterTests {
    /// What the checker reported (the fields the tests judge).
    struct Report: Decodable {
        struct Node: Decodable {
            var name: String
            var role: String
            var epoch: UInt64
            var lastSequence: UInt64
            var parkedEvents: UInt64
        }
        var attempted: Int
        var acknowledged: Int
        var failed: Int
        var failures: [String: Int]
        var slowestFailureMillis: Int
        var lost: Int
        var duplicated: Int
        var unexpected: Int
        var outOfOrder: Int
        var misplaced: Int
        var logsIdentical: Bool
        var nodes: [Node]

        /// Nothing lost, duplicated, invented or reordered, and identical logs.
        var clean: Bool { lost + duplicated + unexpected + outOfOrder + misplaced == 0 && logsIdentical }
    }

    private func check(_ arguments: [String]) async throws -> Report {
        let executable = try chordstoreExecutable().deletingLastPathComponent().appendingPathComponent("chordstore-check")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("chordstore-check-\(UUID().uuidString)")
        let result = try await offPool {
            try runExecutable(executable, ["--dir", directory.path, "--max-seconds", "240"] + arguments, timeout: 300)
        }
        guard let data = result.stdout.data(using: .utf8), !result.stdout.isEmpty else {
            // The end of each node's log too: what a CI log needs to explain it (the
            // directory goes with the test run's scratch directory).
            throw ChildProcessError(message: "chordstore-check printed no report (status \(result.status)): \(result.stderr)\n\(Self.logTails(directory))")
        }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let report = try decoder.decode(Report.self, from: data)
        if report.clean {
            try? FileManager.default.removeItem(at: directory)
        } else {
            // Kept, and the end of each node's log shown: what a CI log needs to explain it.
            Issue.record("chordstore-check found problems (kept in \(directory.path)):\n\(result.stdout)\n\(result.stderr)\n\(Self.logTails(directory))")
        }
        #expect(result.status == (report.clean ? 0 : 1))
        return report
    }

    /// The last lines of each node's log in `directory`.
    static func logTails(_ directory: URL) -> String {
        let logs = (try? FileManager.default.contentsOfDirectory(atPath: directory.path))?.filter { $0.hasSuffix(".log") }.sorted() ?? []
        return logs.map { name in
            let text = (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? ""
            return "== \(name)\n" + text.split(separator: "\n").suffix(25).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    @Test("three nodes: every write on the leader reaches both followers, and the logs are identical")
    func threeNodes() async throws {
        // Deadlines of 10 s, not 2: what is checked is that every write arrives, and under
        // a full parallel test run on two cores a few quorum writes took longer than 2 s.
        let report = try await check(["--writes", "1500", "--clients", "8", "--durability", "quorum", "--timeout-ms", "10000"])
        #expect(report.clean)
        #expect(report.failed == 0, "\(report.failures)")
        #expect(report.acknowledged == 1_500)
        #expect(report.nodes.count == 3)
        #expect(report.nodes.allSatisfy { $0.lastSequence == 1_500 })
        #expect(report.nodes.map(\.role).sorted() == ["follower", "follower", "leader"])
    }

    @Test("a follower killed with SIGKILL during 10,000 writes catches up after its restart")
    func followerKilled() async throws {
        let report = try await check([
            "--writes", "10000", "--clients", "16", "--durability", "local",
            "--fault", "2500:kill:n3", "--fault", "6000:restart:n3",
        ])
        #expect(report.clean)
        #expect(report.failed == 0)
        #expect(report.nodes.allSatisfy { $0.lastSequence == 10_000 })
    }

    @Test("quorum writes succeed with one follower down, and fail within their deadline with both down")
    func quorumWrites() async throws {
        let oneDown = try await check([
            "--writes", "1200", "--clients", "8", "--durability", "quorum",
            "--fault", "300:kill:n3", "--fault", "900:restart:n3",
        ])
        #expect(oneDown.clean)
        #expect(oneDown.failed == 0)

        let bothDown = try await check([
            "--writes", "800", "--clients", "8", "--durability", "quorum", "--timeout-ms", "1000",
            "--fault", "300:kill:n2,n3", "--fault", "340:restart:n2,n3",
        ])
        #expect(bothDown.clean)  // every write reported successful is in every log
        #expect(bothDown.failed > 0)
        #expect(Set(bothDown.failures.keys).isSubset(of: ["DEADLINE_EXCEEDED", "UNAVAILABLE"]))
        #expect(bothDown.slowestFailureMillis < 1_000 + 1_500)
    }

    @Test("a follower stopped with SIGSTOP catches up after SIGCONT, with no duplicates")
    func followerPaused() async throws {
        // What this checks is that every write arrives once, not how fast: 10 s deadlines
        // (8 of 4,000 quorum writes missed 2 s in a loaded CI run).
        let report = try await check([
            "--writes", "4000", "--clients", "8", "--durability", "quorum", "--timeout-ms", "10000",
            "--fault", "800:stop:n2", "--fault", "3000:cont:n2",
        ])
        #expect(report.clean)
        #expect(report.failed == 0, "\(report.failures)")
    }

    @Test("promotion: the leader killed during quorum writes, the most advanced follower promoted, the old leader parks its suffix and converges")
    func promotion() async throws {
        let report = try await check([
            "--writes", "2500", "--clients", "8", "--durability", "quorum", "--timeout-ms", "1000",
            "--fault", "800:kill:n1", "--fault", "800:promote:best", "--fault", "1600:restart:n1",
        ])
        #expect(report.clean)  // no quorum-acknowledged write is missing
        let old = try #require(report.nodes.first { $0.name == "n1" })
        #expect(old.role == "follower")
        #expect(report.nodes.allSatisfy { $0.epoch == 2 })
        #expect(report.nodes.filter { $0.role == "leader" }.count == 1)
    }

    @Test("fencing: the leader frozen with SIGSTOP, a follower promoted, the old leader continued: it steps down and nothing acknowledged is lost")
    func promotionWhileFrozen() async throws {
        let report = try await check([
            "--writes", "1600", "--clients", "8", "--durability", "quorum", "--timeout-ms", "1000",
            "--fault", "500:stop:n1", "--fault", "500:promote:best", "--fault", "1100:cont:n1",
        ])
        #expect(report.clean)
        let old = try #require(report.nodes.first { $0.name == "n1" })
        #expect(old.role == "follower")
        #expect(report.nodes.filter { $0.role == "leader" }.count == 1)
        #expect(report.nodes.allSatisfy { $0.epoch == 2 })
    }

    @Test("the checker's own usage errors are reported with status 64")
    func usage() async throws {
        let executable = try chordstoreExecutable().deletingLastPathComponent().appendingPathComponent("chordstore-check")
        let result = try await offPool { try runExecutable(executable, ["--dir", "/tmp/x", "--fault", "10:explode:n1"], timeout: 30) }
        #expect(result.status == 64)
        #expect(result.stderr.contains("AT:ACTION:NODE"))
    }
}
