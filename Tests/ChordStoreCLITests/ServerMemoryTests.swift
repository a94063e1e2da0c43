import ChordStoreAPI
@_spi(Raw) import ChordStoreClient
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf
import TestSupport
import Testing

/// Memory a burst of connections made the server take is given back once they close.
@Suite("Server memory")
struct ServerMemoryTests {
    /// The server's anonymous resident memory, in bytes (`RssAnon` in /proc).
    static func anonymousMemory(of pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("RssAnon:") }),
              let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "") else { return nil }
        return kilobytes * 1_024
    }

    @Test("100 live queries that never read take memory; once they close the server gives it back", .enabled(if: FileManager.default.fileExists(atPath: "/proc/self/status")))
    func memoryGivenBack() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("server-memory-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (process, port, _) = try await ServerCrashTests.serve(directory)
        defer { process.terminate() }
        let pid = process.processIdentifier
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<10 {
                group.addTask {
                    let connection = try await Connection.connect(host: "127.0.0.1", port: port)
                    for i in 0..<100 {
                        let _: Chordstore_V1_CommandReply = try await connection.call(
                            .addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "chordset \(writer)-\(i)" })
                    }
                    await connection.close()
                }
            }
            try await group.waitForAll()
        }
        try await Task.sleep(for: .seconds(2))
        let baseline = try #require(Self.anonymousMemory(of: pid))
        var watchers: [RawClient] = []
        for _ in 0..<100 {
            let watcher = try RawClient(port: port, receiveBuffer: 4_096)
            try watcher.call(1, Method.watchQuery.rawValue, Chordstore_V1_QueryRequest.with {
                $0.descending = true
                $0.limit = 1_000
            })
            watchers.append(watcher)
        }
        var peak = baseline
        let start = ContinuousClock.now
        while peak < baseline + (40 << 20), ContinuousClock.now - start < .seconds(60) {  // a loaded machine is slow to fill the watchers' buffers
            try await Task.sleep(for: .milliseconds(100))
            peak = max(peak, Self.anonymousMemory(of: pid) ?? 0)
        }
        #expect(peak >= baseline + (40 << 20), "100 unread live queries took only \((peak - baseline) >> 20) MiB: the test shows nothing")
        watchers.removeAll()
        var now = peak
        let closed = ContinuousClock.now
        while now > baseline + (20 << 20), ContinuousClock.now - closed < .seconds(60) {  // a loaded machine is slow to close
            try await Task.sleep(for: .milliseconds(200))
            now = Self.anonymousMemory(of: pid) ?? now
        }
        #expect(
            now <= baseline + (20 << 20),
            "\((now - baseline) >> 20) MiB above the baseline of \(baseline >> 20) MiB 60 s after the connections closed (peak +\((peak - baseline) >> 20) MiB)")
    }
}
