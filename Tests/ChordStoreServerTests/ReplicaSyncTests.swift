@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplica
import ChordStoreServer
import Foundation
import Testing

/// Device replicas against a server: conflicts, continuous sync with status and live
/// queries, revoked tokens and deleted stores, and the replica format's upgrades.
@Suite("Device replicas sync")
struct ReplicaSyncTests {
    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("replica-test-\(UUID().uuidString)")
    }

    static func client(_ server: TestServer, store: String = "", token: String? = nil) -> Client {
        Client(host: "127.0.0.1", port: server.port, retry: .once, store: store, credentials: ClientCredentials(token: token))
    }

    @Test("concurrent offline renames end the same on every device, both stay in history; an edit of a chordset another device deleted is refused and reported")
    func conflicts() async throws {
        let server = try await TestServer.start(durable: true)
        defer { Task { await server.stop() } }
        let client = Self.client(server)
        let phone = try await Replica.open(at: Self.directory(), store: "default")
        let tablet = try await Replica.open(at: Self.directory(), store: "default")
        defer { phone.close(); tablet.close() }
        let verse = try phone.addChordset(AddChordset(title: "Verse"))
        _ = try await phone.sync(with: client)
        _ = try await tablet.sync(with: client)
        #expect(tablet.chordset(verse.id) == verse, "the chordset arrives with the ids and colours the phone chose")

        try phone.renameChordset(verse.id, to: "Phone")
        try tablet.renameChordset(verse.id, to: "Tablet")
        _ = try await phone.sync(with: client)
        _ = try await tablet.sync(with: client)
        _ = try await phone.sync(with: client)
        #expect(phone.chordset(verse.id)?.title == "Tablet")
        #expect(tablet.chordset(verse.id)?.title == "Tablet")
        let titles = try server.store.events(store: "default").compactMap { event -> String? in
            if case .chordsetRenamed(_, let title, _) = event.event { return title }
            return nil
        }
        #expect(titles == ["Phone", "Tablet"])

        // Undo on a device after sync: the phone's rename was overtaken by the tablet's.
        #expect(throws: ChordStoreError.self) { try phone.undo() }
        try tablet.undo()
        #expect(tablet.chordset(verse.id)?.title == "Phone")
        _ = try await tablet.sync(with: client)
        #expect(try server.store.chordset(verse.id)?.title == "Phone")

        try phone.deleteChordset(verse.id)
        try tablet.setChordBPM(verse.chords[0].id, 90)
        let notices = tablet.notices()
        _ = try await phone.sync(with: client)
        let report = try await tablet.sync(with: client)
        #expect(report.rejected.count == 1)
        #expect(report.rejected.first?.code == .notFound && report.rejected.first?.reason == .chordNotFound)
        #expect(tablet.chordset(verse.id) == nil)
        #expect(tablet.pendingWrites.isEmpty)
        #expect(try tablet.rejectedWrites().map(\.write.commandID) == report.rejected.map(\.write.commandID))
        #expect(try tablet.rejectedWrites().map(\.reason) == [.chordNotFound], "the reason is kept with the rejection")
        var iterator = notices.makeAsyncIterator()
        guard case .rejected(let rejection)? = await iterator.next() else {
            Issue.record("no rejection notice")
            return
        }
        #expect(rejection.write.command == .setChordBPM(chordID: verse.chords[0].id, bpm: 90))
    }

    @Test("continuous sync: status goes offline → syncing → up to date, live queries see local writes at once and others' after they commit")
    func continuous() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let replica = try await Replica.open(at: Self.directory(), store: "default")
        defer { replica.close() }
        var statuses = replica.statusUpdates().makeAsyncIterator()
        #expect(await statuses.next() == .offline(pending: 0, lastSequence: 0, reason: "not syncing"))
        var updates = replica.watch(ChordsetQuery(order: .creationDate, limit: 100)).makeAsyncIterator()
        #expect(await updates.next()?.isInitial == true)

        let local = try replica.addChordset(AddChordset(title: "local"))
        let first = await updates.next()
        #expect(first?.deltas == [.insert(local, at: 0)])
        #expect(first?.pending == 1)

        let running = Task { try await replica.run(with: Self.client(server)) }
        defer { running.cancel() }
        while let status = await statuses.next(), status != .upToDate(lastSequence: 1) {}
        #expect(try server.store.chordset(local.id) == local)

        let remote = try await server.store.add("from the server")
        var seen: ReplicaQueryUpdate?
        repeat { seen = await updates.next() } while seen?.chordsets.count != 2
        #expect(seen?.chordsets.map(\.id) == [local.id, remote.id])
        while let status = await statuses.next(), status != .upToDate(lastSequence: 2) {}
        try replica.renameChordset(remote.id, to: "renamed on the device")
        while let status = await statuses.next(), status != .upToDate(lastSequence: 3) {}
        #expect(try server.store.chordset(remote.id)?.title == "renamed on the device")
    }

    @Test("a revoked token and a deleted store stop the sync with a typed error; the pending writes stay")
    func revokedAndDeleted() async throws {
        let admin = SecurityTests.adminSecret
        let server = try await TestServer.start(durable: true, security: SecurityTests.secured)
        defer { Task { await server.stop() } }
        let adminClient = Client(host: "127.0.0.1", port: server.port, retry: .once, credentials: ClientCredentials(token: admin))
        _ = try await adminClient.createStore("songs")
        let created: Chordstore_V1_CreatedToken = try await adminClient.call(.createToken, Chordstore_V1_CreateTokenRequest.with {
            $0.role = .readWrite
            $0.store = "songs"
        })
        let replica = try await Replica.open(at: Self.directory(), store: "songs")
        defer { replica.close() }
        try replica.addChordset(AddChordset(title: "first"))
        _ = try await replica.sync(with: Self.client(server, store: "songs", token: created.secret))
        #expect(replica.lastSequence == 1)

        let wrongStore = await #expect(throws: ReplicaError.self) { _ = try await replica.sync(with: Self.client(server, store: "other", token: admin)) }
        #expect(wrongStore?.code == .wrongStore)

        try replica.addChordset(AddChordset(title: "second"))
        let _: Chordstore_V1_RevokeTokenReply = try await adminClient.call(
            .revokeToken, Chordstore_V1_RevokeTokenRequest.with { $0.tokenID = created.token.tokenID })
        let revoked = await #expect(throws: ReplicaError.self) {
            _ = try await replica.sync(with: Self.client(server, store: "songs", token: created.secret))
        }
        #expect(revoked?.code == .accessRevoked)
        #expect(replica.pendingWrites.count == 1)
        guard case .stopped(let stopped, 1, 1) = replica.status else {
            Issue.record("status is \(replica.status)")
            return
        }
        #expect(stopped.code == .accessRevoked)

        // Deleted, with an admin token; then created again under the same name.
        _ = try await adminClient.deleteStore("songs")
        let deleted = await #expect(throws: ReplicaError.self) {
            _ = try await replica.sync(with: Self.client(server, store: "songs", token: admin))
        }
        #expect(deleted?.code == .storeDeleted)
        _ = try await adminClient.createStore("songs")
        _ = try await server.store.execute(.addChordset(AddChordset(title: "a"))
                                           , context: CommandContext(store: "songs"))
        let replaced = await #expect(throws: ReplicaError.self) {
            _ = try await replica.sync(with: Self.client(server, store: "songs", token: admin))
        }
        #expect(replaced?.code == .storeReplaced)
        #expect(replica.pendingWrites.count == 1)
    }

    @Test("a newer replica format is refused, a copy of the events that does not add up is copied again; pending writes are never lost")
    func formats() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let directory = Self.directory()
        var replica = try await Replica.open(at: directory, store: "default")
        try replica.addChordset(AddChordset(title: "synced"))
        _ = try await replica.sync(with: Self.client(server))
        let pending = try replica.addChordset(AddChordset(title: "pending"))
        replica.close()

        /// Writes a number into a file's `meta`, with the checksum docs/DEVICES.md gives.
        func setMeta(_ key: String, _ value: UInt64, in file: String = "events.sqlite") throws {
            try ReplicaFiles.setMeta(key, value, in: directory.appendingPathComponent(file))
        }

        try setMeta("head", 7)  // the copy holds 1 event: it no longer adds up
        replica = try await Replica.open(at: directory)
        #expect(replica.resyncReason?.contains("damaged") == true)
        #expect(replica.lastSequence == 0)
        #expect(replica.pendingWrites.count == 1)
        #expect(replica.chordset(pending.id)?.title == "pending")
        var notices = replica.notices().makeAsyncIterator()
        _ = try await replica.sync(with: Self.client(server))
        #expect(try replica.chordsets().chordsets.map(\.title) == ["synced", "pending"])
        // The sync announced the copy first, then confirmed the pending write.
        guard case .resyncing(let reason)? = await notices.next() else {
            Issue.record("the first notice of the sync is not resyncing")
            return
        }
        #expect(reason.contains("damaged"))
        replica.close()

        try setMeta("format", 99, in: "queue.sqlite")
        let newer = await #expect(throws: ReplicaError.self) { _ = try await Replica.open(at: directory) }
        #expect(newer?.code == .formatTooNew)
        try setMeta("format", 2, in: "queue.sqlite")
        // Tables of a later version (a migration this one does not know) in the queue's
        // file are refused too.
        try ReplicaFiles.execute("INSERT INTO grdb_migrations (identifier) VALUES ('format 3')", in: directory.appendingPathComponent("queue.sqlite"))
        let later = await #expect(throws: ReplicaError.self) { _ = try await Replica.open(at: directory) }
        #expect(later?.code == .formatTooNew)
        try ReplicaFiles.execute("DELETE FROM grdb_migrations WHERE identifier = 'format 3'", in: directory.appendingPathComponent("queue.sqlite"))
        // In the copy of the events (which can be copied again; a bit flipped in its list of
        // migrations reads the same), they drop the copy, the queue kept.
        try ReplicaFiles.execute("INSERT INTO grdb_migrations (identifier) VALUES ('format 3')", in: directory.appendingPathComponent("events.sqlite"))
        let recopied = try await Replica.open(at: directory)
        #expect(recopied.damageFound.map(\.kind) == [.copyDropped], "\(recopied.damageFound)")
        #expect(recopied.lastSequence == 0)
        _ = try await recopied.sync(with: Self.client(server))
        #expect(try recopied.chordsets().chordsets.map(\.title) == ["synced", "pending"])
        recopied.close()
        let locked = try await Replica.open(at: Self.directory(), store: "default")
        defer { locked.close() }
        let inUse = await #expect(throws: ReplicaError.self) { _ = try await Replica.open(at: locked.directory) }
        #expect(inUse?.code == .inUse)
    }
}
