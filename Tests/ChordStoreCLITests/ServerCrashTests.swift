import ChordStoreAPI
@_spi(Raw) import ChordStoreClient
import ChordStoreEngine
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf
import TestSupport
import Testing

/// `chordstore serve` killed with SIGKILL while several clients write: after a restart,
/// every write a client saw acknowledged is there and verify passes.
@Suite("Server crash safety")
struct ServerCrashTests {
    /// Starts `chordstore serve` on a free port (with `extra` arguments: by default
    /// `--auth none`, for tests about other things); returns the process and its port.
    static func serve(_ directory: URL, _ extra: [String] = ["--auth", "none"]) async throws -> (Process, Int, OutputCollector) {
        let served = try await ServedChordstore.start(directory, extra)
        return (served.process, served.port, served.log)
    }

    /// Serves `directory` with `arguments` while 4 clients add chordsets, and kills the
    /// server with SIGKILL once they write (a moment later each `round`); the adds it
    /// acknowledged go to `acknowledged`. With `waitingFor`, the kill also waits (up to
    /// 20 s) until that file exists. Returns what the server logged.
    @discardableResult
    static func writeAndKill(
        _ directory: URL, _ arguments: [String], round: Int, _ acknowledged: AcknowledgedWrites, waitingFor file: URL? = nil
    ) async throws -> String {
        let (process, port, log) = try await Self.serve(directory, arguments)
        let writers = Task {
            await withTaskGroup(of: Void.self) { group in
                for client in 0..<4 {
                    group.addTask {
                        guard let connection = try? await Connection.connect(host: "127.0.0.1", port: port) else { return }
                        for i in 0..<10_000 {
                            let request = Chordstore_V1_AddChordsetRequest.with {
                                $0.title = "r\(round)-c\(client)-\(i)"
                                $0.context.commandID = "r\(round)-c\(client)-\(i)"
                            }
                            guard let reply = try? await connection.call(.addChordset, request, as: Chordstore_V1_CommandReply.self) else { return }
                            acknowledged.add(reply.event.chordsetAdded.chordset.id)
                        }
                    }
                }
            }
        }
        // Kill once the clients are writing (at least 20 more acknowledgements),
        // at a moment that differs per round.
        let before = acknowledged.all.count
        let start = Date()
        while acknowledged.all.count < before + 20, Date().timeIntervalSince(start) < 20 {
            try await Task.sleep(for: .milliseconds(5))
        }
        while let file, !FileManager.default.fileExists(atPath: file.path), Date().timeIntervalSince(start) < 20 {
            try await Task.sleep(for: .milliseconds(5))
        }
        try await Task.sleep(for: .milliseconds(50 * round))
        kill(process.processIdentifier, SIGKILL)
        try await offPool { process.waitUntilExit() }
        await writers.value
        return log.text
    }

    @Test("SIGKILL during concurrent writes from 4 clients loses no acknowledged write (views, then --live-state, saving its state in the background every 16 events: each start after a kill loads a state the background saved)", arguments: [false, true])
    func killServer(live: Bool) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("server-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let acknowledged = AcknowledgedWrites()
        for round in 0..<3 {
            let log = try await Self.writeAndKill(
                directory, ["--auth", "none"] + (live ? ["--live-state", "--live-state-save-events", "16"] : []), round: round, acknowledged,
                waitingFor: live ? directory.appendingPathComponent("live-state") : nil)
            if live, round > 0 {
                #expect(log.contains("the live state was loaded from the state saved last"), "\(log)")
            }
        }
        let ids = acknowledged.all
        #expect(ids.count > 50, "the clients should have written before the kills")
        var options = ChordStore.Options()
        options.liveState = live  // verify then checks the live state and the views
        let store = try ChordStore.open(at: directory, options: options)
        defer { store.close() }
        for id in ids {
            guard try store.chordset(try UUID(protoBytes: id)) != nil else {
                Issue.record("an acknowledged chordset is missing")
                return
            }
        }
        let report = try store.verify()
        #expect(report.isSound, "\(String(describing: report.problem))")
    }

    @Test("SIGKILL during writes, then views/open naming another boot (a machine crash): with --restore-point-interval the views go back to their restore point and catch up; nothing acknowledged is lost")
    func machineCrashWithRestorePoint() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("server-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let arguments = ["--auth", "none", "--restore-point-interval", "0.05"]
        let acknowledged = AcknowledgedWrites()
        try await Self.writeAndKill(directory, arguments, round: 2, acknowledged)
        let marker = directory.appendingPathComponent("views/open")
        let words = try String(contentsOf: marker, encoding: .utf8).split(whereSeparator: \.isWhitespace)
        #expect(words.count == 2, "views/open names the boot and the opening")
        try "another-boot \(words.last ?? "")".write(to: marker, atomically: true, encoding: .utf8)
        let (process, _, log) = try await Self.serve(directory, arguments)
        #expect(log.text.contains("went back to their restore point at event"), "\(log.text)")
        kill(process.processIdentifier, SIGINT)
        try await offPool { process.waitUntilExit() }
        let ids = acknowledged.all
        #expect(ids.count > 20)
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        for id in ids where try store.chordset(try UUID(protoBytes: id)) == nil {
            Issue.record("an acknowledged chordset is missing")
            return
        }
        let report = try store.verify()
        #expect(report.isSound, "\(String(describing: report.problem))")
    }
}

/// Ids of acknowledged adds, collected from several tasks.
final class AcknowledgedWrites: @unchecked Sendable {
    private let lock = NSLock()
    private var ids: [Data] = []

    func add(_ id: Data) { lock.withLock { ids.append(id) } }
    var all: [Data] { lock.withLock { ids } }
}
