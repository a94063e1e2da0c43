import ChordStoreAPI
import ChordStoreDomain
@_spi(Raw) import ChordStoreClient
import ChordStoreEngine
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf
import Synchronization
import TestSupport
import Testing

/// `chordstore serve` as an operator runs it: metrics and health over HTTP, JSON logs, a
/// graceful SIGTERM under load, and a map that may not grow past --map-size-max.
@Suite("Operations: metrics, health, logs, shutdown, full maps")
struct OperationsTests {
    /// Starts `chordstore serve` on free ports with `extra` arguments (authentication off:
    /// these tests are about other things).
    static func serve(_ directory: URL, _ extra: [String] = [], http: Bool = true) async throws -> ServedChordstore {
        try await ServedChordstore.start(directory, ["--auth", "none"] + extra, http: http)
    }

    /// The value of the sample `name` (with its labels, exactly as emitted) in a scrape.
    static func sample(_ name: String, in metrics: String) -> Double? {
        for line in metrics.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1))
        }
        return nil
    }

    @Test("/metrics shows chordstore metrics that move when you add; /health/live and /health/ready answer 200; every log line is JSON")
    func metricsHealthAndJSONLogs() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("operations-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let served = try await Self.serve(directory, ["--log-format", "json"])
        defer { served.stopIfRunning() }
        let http = try #require(served.httpPort)
        let before = try await httpGet(port: http, path: "/metrics")
        #expect(before.status == 200)
        #expect(before.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        let sequenceBefore = try #require(Self.sample("chordstore_log_sequence", in: before.body), "\(before.body)")
        #expect(Self.sample("chordstore_calls_total{method=\"AddChordset\",code=\"OK\"}", in: before.body) == nil)

        for title in ["Verse", "Chorus"] {
            let added = try await runChordstore(["--server", "127.0.0.1:\(served.port)", "add", title])
            try #require(added.status == 0, "\(added.stderr)")
        }
        let refused = try await runChordstore(["--server", "127.0.0.1:\(served.port)", "rename", UUID().uuidString, "x"])
        #expect(refused.status == 1)
        let after = try await httpGet(port: http, path: "/metrics").body
        #expect(Self.sample("chordstore_calls_total{method=\"AddChordset\",code=\"OK\"}", in: after) == 2, "\(after)")
        #expect(Self.sample("chordstore_calls_total{method=\"RenameChordset\",code=\"NOT_FOUND\"}", in: after) == 1, "\(after)")
        #expect(Self.sample("chordstore_log_sequence", in: after) == sequenceBefore + 2)
        #expect((Self.sample("chordstore_commit_events_count", in: after) ?? 0) >= 1)
        #expect((Self.sample("chordstore_log_sync_seconds_count", in: after) ?? 0) >= 1)
        #expect((Self.sample("chordstore_call_seconds_count{method=\"AddChordset\"}", in: after) ?? 0) == 2)
        #expect((Self.sample("chordstore_log_bytes", in: after) ?? 0) > 0)
        #expect(Self.sample("chordstore_map_usage_percent{map=\"log\"}", in: after) != nil)
        #expect(Self.sample("chordstore_leader", in: after) == 1)
        #expect(Self.sample("chordstore_writes_refused", in: after) == 0)

        let live = try await httpGet(port: http, path: "/health/live")
        #expect(live.status == 200 && live.body.contains("\"live\""), "\(live)")
        let ready = try await httpGet(port: http, path: "/health/ready")
        #expect(ready.status == 200, "\(ready)")
        let report = try JSONSerialization.jsonObject(with: Data(ready.body.utf8)) as? [String: Any]
        #expect(report?["status"] as? String == "ready")
        #expect(report?["role"] as? String == "leader")
        #expect(report?["writes"] as? String == "accepted")
        #expect(try await httpGet(port: http, path: "/nothing-here").status == 404)

        #expect(try await served.terminate() == 0)
        let lines = served.log.finish().split(separator: "\n")
        #expect(lines.count >= 4)
        for line in lines {
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["time"] is String && object?["level"] is String && object?["message"] is String, "not a JSON log line: \(line)")
        }
        #expect(lines.contains { $0.contains("\"message\":\"shutting down: draining\"") })
    }

    @Test("serve --live-state --max-state-memory evicts the stores used least recently (counted in /metrics) and answers from the log as before; a restart keeps the state")
    func stateMemoryBound() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("operations-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        for round in 0..<2 {
            let served = try await Self.serve(directory, ["--live-state", "--max-state-memory", "1"])
            defer { served.stopIfRunning() }
            let http = try #require(served.httpPort)
            let server = ["--server", "127.0.0.1:\(served.port)"]
            if round == 0 {
                #expect(try await runChordstore(server + ["store", "create", "songs"]).status == 0)
                for (store, title) in [("default", "Verse"), ("songs", "Intro"), ("default", "Chorus")] {
                    let added = try await runChordstore(server + ["--store", store, "add", title])
                    try #require(added.status == 0, "\(added.stderr)")
                }
            }
            // Bound 1: of the two stores, the one used first is evicted at each turn; a
            // read of it folds it from the log and puts it back (a load).
            for (store, titles) in [("default", ["Verse", "Chorus"]), ("songs", ["Intro"]), ("default", ["Verse", "Chorus"])] {
                let listed = try await runChordstore(server + ["--store", store, "list"])
                #expect(listed.status == 0, "\(listed.stderr)")
                #expect(titles.allSatisfy { listed.stdout.contains($0) }, "\(store): \(listed.stdout)")
            }
            var metrics = ""
            for _ in 0..<500 {
                metrics = try await httpGet(port: http, path: "/metrics").body
                let moved = ["chordstore_state_evictions_total", "chordstore_state_loads_total"].allSatisfy { (Self.sample($0, in: metrics) ?? 0) >= 1 }
                if moved { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect((Self.sample("chordstore_state_evictions_total", in: metrics) ?? 0) >= 1, "\(metrics)")
            #expect((Self.sample("chordstore_state_loads_total", in: metrics) ?? 0) >= 1, "\(metrics)")
            #expect((Self.sample("chordstore_state_bytes", in: metrics) ?? 0) > 0, "\(metrics)")
            #expect(try await served.terminate() == 0)
        }
    }

    @Test("/metrics of a leader and its follower passes Prometheus's lint (promtool check metrics): every metric has HELP and TYPE")
    func metricsPassPromtool() async throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("operations-lint-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        let ports = try LoopbackPorts.free(2)
        let leader = try await Self.serve(base.appendingPathComponent("leader"), [
            "--advertise", "127.0.0.1:\(ports[0])", "--peer", "127.0.0.1:\(ports[1])", "--port", "\(ports[0])",
        ])
        defer { leader.stopIfRunning() }
        #expect(await eventually { (try? await runChordstore(["--server", "127.0.0.1:\(ports[0])", "add", "Verse"]))?.status == 0 })
        let follower = try await Self.serve(base.appendingPathComponent("follower"), [
            "--follow", "127.0.0.1:\(ports[0])", "--advertise", "127.0.0.1:\(ports[1])", "--peer", "127.0.0.1:\(ports[0])", "--port", "\(ports[1])",
        ])
        defer { follower.stopIfRunning() }
        // A stream open during the scrape, and the follower's lag reported on both sides.
        let watch = Task { try await runChordstore(["--server", "127.0.0.1:\(ports[0])", "watch", "--now", "--count", "1"]) }
        var scrapes: [String] = []
        #expect(await eventually {
            scrapes = []
            for served in [leader, follower] {
                guard let port = served.httpPort, let scrape = try? await httpGet(port: port, path: "/metrics").body else { return false }
                scrapes.append(scrape)
            }
            // The watch's own stream, not the follower's Replicate: an event added before
            // the watch subscribed would never reach it.
            return scrapes[0].contains("chordstore_replication_lag_events{") && scrapes[0].contains("chordstore_streams{method=\"Subscribe\"} 1")
                && scrapes[1].contains("chordstore_follower_lag_events ")
        }, "\(scrapes)")
        #expect(try await runChordstore(["--server", "127.0.0.1:\(ports[0])", "add", "Chorus"]).status == 0)
        _ = try await watch.value
        for (name, scrape) in zip(["leader", "follower"], scrapes) {
            let file = base.appendingPathComponent("\(name).metrics")
            try Data(scrape.utf8).write(to: file)
            let lint = try await offPool { try runExecutable(URL(fileURLWithPath: "/bin/sh"), ["-c", "promtool check metrics < '\(file.path)'"], timeout: 60) }
            #expect(lint.status == 0, "\(name): promtool says \(lint.stdout)\(lint.stderr)")
            let lines = scrape.split(separator: "\n")
            let typed = Set(lines.filter { $0.hasPrefix("# TYPE ") }.map { $0.split(separator: " ")[2] })
            let described = Set(lines.filter { $0.hasPrefix("# HELP ") }.map { $0.split(separator: " ")[2] })
            #expect(typed.count >= 15 && typed == described, "\(name): without HELP: \(typed.subtracting(described))")
        }
        #expect(try await follower.terminate() == 0)
        #expect(try await leader.terminate() == 0)
    }

    @Test("SIGTERM under load: exit 0, no call hangs, streams end with UNAVAILABLE, nothing acknowledged is lost")
    func sigtermUnderLoad() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("operations-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let served = try await Self.serve(directory, ["--grace", "10"], http: false)
        defer { served.stopIfRunning() }
        let port = served.port
        let load = WriteLoad(port: port, clients: 4, writes: 3_000)
        let subscription = Task { () -> String in
            do {
                let connection = try await Connection.connect(host: "127.0.0.1", port: port)
                let stream = try await connection.stream(.subscribe, Chordstore_V1_SubscribeRequest.with { $0.fromSequence = 1 }, as: Chordstore_V1_EventEnvelope.self)
                for try await _ in stream {}
                return "ended with OK"
            } catch let error as ClientError {
                return "\(error.code): \(error.message)"
            } catch {
                return "\(error)"
            }
        }
        let loaded = await eventually { load.acknowledged.count >= 50 }
        try #require(loaded, "the clients should be writing")
        #expect(try await served.terminate() == 0, "\(served.log.text)")  // within 30 s, or it fails
        await load.finished()
        let stream = await subscription.value
        #expect(stream.hasPrefix("UNAVAILABLE"), "the subscription ended with \(stream)")
        // Each client's call in flight was answered UNAVAILABLE, or its connection got a
        // GoAway or closed: none timed out waiting.
        let endings = load.endings
        #expect(endings.count == 4 && endings.allSatisfy { ["status 14", "GoAway 14", "closed", "done"].contains($0) }, "\(endings)")
        #expect(served.log.text.contains("shutting down: draining"))

        let ids = load.acknowledged
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        var missing = 0
        for id in ids where try store.chordset(try UUID(protoBytes: id)) == nil { missing += 1 }
        #expect(missing == 0, "\(missing) of \(ids.count) acknowledged chordsets are missing")
        #expect(try store.verify().isSound)
    }

    @Test("a map at --map-size-max: writes refused with RESOURCE_EXHAUSTED naming the map, reads go on, nothing acknowledged lost; a larger limit takes writes again")
    func fullMap() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("operations-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let served = try await Self.serve(directory, ["--map-size-max", "2MiB"])
        defer { served.stopIfRunning() }
        let connection = try await Connection.connect(host: "127.0.0.1", port: served.port)
        var acknowledged: [Data] = []
        var refusal: ClientError?
        for i in 0..<20_000 {
            do {
                let reply = try await connection.call(
                    .addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "fill \(i)" }, as: Chordstore_V1_CommandReply.self)
                acknowledged.append(reply.event.chordsetAdded.chordset.id)
            } catch {
                refusal = error
                break
            }
        }
        let refused = try #require(refusal, "2 MiB should fill before 20,000 adds")
        #expect(refused.code == .resourceExhausted)
        #expect(refused.message.contains("map") && refused.message.contains("--map-size-max"), "\(refused.message)")
        #expect(acknowledged.count > 10)
        // Reads go on, and the next write is refused the same way.
        let list = try await connection.call(.listChordsets, Chordstore_V1_ListChordsetsRequest.with { $0.limit = 5 }, as: Chordstore_V1_ChordsetList.self)
        #expect(list.chordsets.count == 5)
        do {
            _ = try await connection.call(.addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "one more" }, as: Chordstore_V1_CommandReply.self)
            Issue.record("a write was taken past the map's limit")
        } catch {
            #expect(error.code == .resourceExhausted)
        }
        // The change feed goes on too: the stored events, from the first.
        let feed = try await connection.stream(
            .readLog, Chordstore_V1_ReadLogRequest.with { $0.fromSequence = 1 }, as: Chordstore_V1_EventEnvelope.self)
        var fed = 0
        for try await _ in feed { fed += 1 }
        #expect(fed == acknowledged.count)
        let metrics = try await httpGet(port: try #require(served.httpPort), path: "/metrics").body
        #expect(Self.sample("chordstore_writes_refused", in: metrics) == 1, "the refusal shows until a write fits again")
        let ready = try await httpGet(port: try #require(served.httpPort), path: "/health/ready")
        #expect(ready.status == 200, "a full map still serves reads: \(ready.body)")
        #expect(ready.body.contains("refused: RESOURCE_EXHAUSTED") && ready.body.contains("--map-size-max"), "\(ready.body)")
        await connection.close()
        #expect(try await served.terminate() == 0)

        let again = try await Self.serve(directory, ["--map-size-max", "64MiB"], http: false)
        defer { again.stopIfRunning() }
        let added = try await runChordstore(["--server", "127.0.0.1:\(again.port)", "add", "after the restart"])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(try await again.terminate() == 0)
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        for id in acknowledged { #expect(try store.chordset(try UUID(protoBytes: id)) != nil) }
        #expect(try store.profile().chordsets == acknowledged.count + 1)
    }
}
