import ChordStoreTesting
import Foundation
import TestSupport
import Testing

/// tools/bench/etcd-load.c, the load generator of compare's three-member row, against a
/// real etcd: every put it counts is one etcd applied.
@Suite("etcd load generator", .serialized)
struct EtcdLoadTests {
    /// The repository root, from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("etcd-load puts over etcd's gRPC and reports as wire-load does; etcd's revision grows by the puts it counts")
    func putsLand() async throws {
        let etcd = try await EtcdServer.start()
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("etcd-load-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        let build = try await runTool(Self.root.appendingPathComponent("tools/c-client/build").path, [output.path])
        #expect(build.status == 0, "\(build.output)")
        let load = output.appendingPathComponent("etcd-load").path
        let port = try #require(etcd.clientURL.split(separator: ":").last.map(String.init))

        let before = try await revision(etcd)
        let result = try await runTool(load, ["127.0.0.1", port, "3", "0.5", "200"])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("etcd put: 3 connection(s) × depth 1"), "\(result.output)")
        #expect(result.output.contains("calls/s; latency p50"), "\(result.output)")
        let calls = try #require(result.output.firstMatch(of: /, (\d+) calls/).flatMap { Int($0.1) })
        #expect(calls > 0)
        let after = try await revision(etcd)
        #expect(after - before == calls, "revision \(before) → \(after) for \(calls) puts")

        // A value above the tool's limit (16,000 bytes: a call is one DATA frame), and
        // missing arguments: usage errors.
        let tooLarge = try await runTool(load, ["127.0.0.1", port, "1", "0.1", "16001"])
        #expect(tooLarge.status == 2, "\(tooLarge.output)")
        let usage = try await runTool(load, ["127.0.0.1", port])
        #expect(usage.status == 2)
        #expect(usage.output.contains("usage: etcd-load"))
        // Nothing listening: a connection error, not a hang.
        etcd.kill()
        let refused = try await runTool(load, ["127.0.0.1", port, "1", "0.1"])
        #expect(refused.status == 2, "\(refused.output)")
    }

    /// etcd's current revision, from `etcdctl endpoint status`.
    private func revision(_ etcd: EtcdServer) async throws -> Int {
        let status = try await runTool("/usr/bin/env", ["etcdctl", "--endpoints", etcd.clientURL, "endpoint", "status", "-w", "json"],
                                   environment: ["ETCDCTL_API": "3"])
        #expect(status.status == 0, "\(status.output)")
        return try #require(status.output.firstMatch(of: /"revision":(\d+)/).flatMap { Int($0.1) }, "\(status.output)")
    }
}
