@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplication
import ChordStoreServer
import ChordStoreWire
import Foundation
import Logging
import Synchronization
import Testing

/// A new follower serves reads from its copy of the leader's views while the log is
/// still arriving (``FollowerBootstrap``, ``Server/servingViews(host:port:grace:make:)``),
/// and stops that before its files move into place.
@Suite("Bootstrap: reads from the copy's views before the log arrives")
struct BootstrapViewsTests {
    @Test("once the views are whole, and before the log's first byte, the follower's port answers reads as the leader has them, refuses writes as a follower, and what needs the log with UNAVAILABLE; then it stops, and the whole copy opens")
    func servesViewsBeforeTheLog() async throws {
        let leader = try await TestServer.start(durable: true)
        defer { Task { await leader.stop() } }
        var added: [String] = []
        for index in 0..<30 {
            added.append(try await leader.store.add("before \(index)").title)
        }
        let titles = added
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bootstrap-views-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try LoopbackPorts.free(1)[0]
        var logger = Logger(label: "bootstrap-test")
        logger.logLevel = .critical
        let config = ReplicationConfig(
            node: "new", address: "127.0.0.1:\(port)", peers: ["127.0.0.1:\(leader.port)"], follow: "127.0.0.1:\(leader.port)",
            parkDirectory: directory.appendingPathComponent("parked"))
        let serve = Server.servingViews(host: "127.0.0.1", port: port) { [logger] views in
            Server(
                store: views, node: "new", replication: .receivingLog(config: config, store: views, logger: logger), security: .loopbackOnly,
                logger: logger, threads: 1)
        }
        let checked = Mutex(false)
        let head = try await FollowerBootstrap.run(
            leader: "127.0.0.1:\(leader.port)", into: directory, credentials: ClientCredentials(), logger: logger,
            serveViews: { views in
                let stop = try await serve(views)
                do {
                    try await Self.checkServing(port: port, titles: titles, directory: directory)
                } catch {
                    await stop()
                    throw error
                }
                checked.withLock { $0 = true }
                return stop
            })
        #expect(checked.withLock { $0 }, "the views were never served")
        #expect(head.sequence == 30)
        // Stopped before the files moved: nothing listens on the port now.
        await #expect(throws: (any Error).self) { try await Connection.connect(host: "127.0.0.1", port: port) }
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        #expect(try store.chordsets(order: .creationDate, limit: nil).map(\.title) == titles)
        #expect(try store.verify().isSound)
    }

    /// What the views' server answers before the log's first byte has arrived.
    static func checkServing(port: Int, titles: [String], directory: URL) async throws {
        // The download waits for this: the log has not begun to arrive.
        let staging = directory.appendingPathComponent(FollowerBootstrap.staging)
        #expect(!FileManager.default.fileExists(atPath: staging.appendingPathComponent(BackupFiles.log).path))
        let connection = try await Connection.connect(host: "127.0.0.1", port: port)
        let list = try await connection.call(.listChordsets, Chordstore_V1_ListChordsetsRequest(), as: Chordstore_V1_ChordsetList.self)
        #expect(list.chordsets.map(\.title) == titles)
        await Self.expectRefusal(.failedPrecondition, "not the leader: ") {
            _ = try await connection.call(.addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "refused" }, as: Chordstore_V1_CommandReply.self)
        }
        await Self.expectRefusal(.unavailable, "still receiving its copy of the leader's log") {
            _ = try await connection.call(
                .getHistory, Chordstore_V1_GetHistoryRequest.with { $0.chordsetID = list.chordsets[0].id }, as: Chordstore_V1_HistoryPage.self)
        }
        let status = try await connection.call(.getNodeStatus, Chordstore_V1_NodeStatusRequest(), as: Chordstore_V1_NodeStatus.self)
        #expect(status.role == "follower" && status.leader.isEmpty && status.lastSequence == UInt64(titles.count), "\(status)")
        #expect(status.replication == ReplicationNode.receivingLogDescription)
        await connection.close()
    }

    @Test("a copy that fails after the views were served stops their server each time it served them, and gives up with nothing left listening")
    func stopsWhenTheCopyFails() async throws {
        let leader = try await TestServer.start(durable: true)
        defer { Task { await leader.stop() } }
        for index in 0..<10 { _ = try await leader.store.add("before \(index)") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bootstrap-views-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = try LoopbackPorts.free(1)[0]
        var logger = Logger(label: "bootstrap-test")
        logger.logLevel = .critical
        let serve = Server.servingViews(host: "127.0.0.1", port: port) { [logger] views in
            Server(store: views, node: "new", security: .loopbackOnly, logger: logger, threads: 1)
        }
        let counts = Mutex((started: 0, stopped: 0))
        let refusals = Mutex<[String]>([])
        await #expect(throws: (any Error).self) {
            _ = try await FollowerBootstrap.run(
                leader: "127.0.0.1:\(leader.port)", into: directory, credentials: ClientCredentials(), patience: .seconds(2),
                logger: logger,
                serveViews: { views in
                    let stop: @Sendable () async -> Void
                    do {
                        stop = try await serve(views)
                    } catch {
                        // Recorded: the copy then goes on without the views served, and succeeds.
                        refusals.withLock { $0.append("\(error)") }
                        throw error
                    }
                    counts.withLock { $0.started += 1 }
                    // The staging directory goes: the log that comes next cannot be written.
                    try? FileManager.default.removeItem(at: views.deletingLastPathComponent())
                    return {
                        await stop()
                        counts.withLock { $0.stopped += 1 }
                    }
                })
        }
        let (started, stopped) = counts.withLock { ($0.started, $0.stopped) }
        // Each attempt served the views and was stopped (how many attempts fit in the
        // patience depends on the machine's load: usually several).
        #expect(started >= 1 && stopped == started, "started \(started), stopped \(stopped)")
        #expect(refusals.withLock { $0 }.isEmpty, "the views' server did not start on port \(port): \(refusals.withLock { $0 })")
        await #expect(throws: (any Error).self) { try await Connection.connect(host: "127.0.0.1", port: port) }
        #expect(FollowerBootstrap.isNew(directory))
    }

    static func expectRefusal(_ code: StatusCode, _ text: String, _ call: () async throws -> Void) async {
        do {
            try await call()
            Issue.record("no refusal (\(code) expected)")
        } catch let error as ClientError {
            #expect(error.code == code && error.message.contains(text), "\(error)")
        } catch {
            Issue.record("\(error)")
        }
    }
}
