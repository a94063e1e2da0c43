import ChordStoreRecords
import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreReplica
import ChordStoreServer
import Foundation
import Testing

/// A byte changed on the device's disk is found, reported as damage, and never shown,
/// sent or taken for the server's doing (issue 37's cases 5 to 8, each reproduced first
/// through `chordstore replica`).
@Suite("Device replicas find damage on the device")
struct ReplicaDamageTests {
    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("replica-damage-\(UUID().uuidString)")
    }

    static func client(_ server: TestServer) -> Client { Client(host: "127.0.0.1", port: server.port, retry: .once) }

    /// A server with Alpha, Bravo and Charlie, and a replica that copied them, closed.
    static func synced() async throws -> (TestServer, URL) {
        let server = try await TestServer.start()
        for title in ["Alpha", "Bravo", "Charlie"] { _ = try await server.store.add(title) }
        let directory = directory()
        let replica = try await Replica.open(at: directory, store: "default")
        _ = try await replica.sync(with: client(server))
        replica.close()
        return (server, directory)
    }

    @Test("a copied event changed on the disk (Bravo read as Cravo) is never shown: the copy is dropped at open and the sync copies it again")
    func damagedEvent() async throws {
        let (server, directory) = try await Self.synced()
        defer { Task { await server.stop() } }
        #expect(try ReplicaFiles.damage(directory.appendingPathComponent("events.sqlite"), table: "events", column: "record", find: "Bravo", replace: "Cravo"))
        let replica = try await Replica.open(at: directory)
        defer { replica.close() }
        #expect(replica.resyncReason?.contains("damaged") == true, "\(String(describing: replica.resyncReason))")
        #expect(replica.damageFound.map(\.kind) == [.copyDropped])
        #expect(!(try replica.chordsets().chordsets.map(\.title)).contains("Cravo"))
        _ = try await replica.sync(with: Self.client(server))
        #expect(try replica.chordsets().chordsets.map(\.title) == ["Alpha", "Bravo", "Charlie"])
    }

    @Test("a damaged last copied event is copied again, not taken for a store replaced on the server")
    func damagedLastEvent() async throws {
        let (server, directory) = try await Self.synced()
        defer { Task { await server.stop() } }
        #expect(try ReplicaFiles.damage(directory.appendingPathComponent("events.sqlite"), table: "events", column: "record", find: "Charlie", replace: "Charlid"))
        let replica = try await Replica.open(at: directory)
        defer { replica.close() }
        try replica.addChordset(AddChordset(title: "Delta"))
        let report = try await replica.sync(with: Self.client(server))
        #expect(report.pushed == 1)
        #expect(try replica.chordsets().chordsets.map(\.title) == ["Alpha", "Bravo", "Charlie", "Delta"])
        #expect(try server.store.chordsets().map(\.title) == ["Alpha", "Bravo", "Charlie", "Delta"])
    }

    @Test("a queued write changed on the disk is never sent: taken aside as rejected DATA_LOSS / DAMAGED_ON_DEVICE, the writes after it go")
    func damagedQueuedWrite() async throws {
        let (server, directory) = try await Self.synced()
        defer { Task { await server.stop() } }
        var replica = try await Replica.open(at: directory)
        try replica.addChordset(AddChordset(title: "Queued"))
        try replica.addChordset(AddChordset(title: "Next"))
        replica.close()
        #expect(try ReplicaFiles.damage(directory.appendingPathComponent("queue.sqlite"), table: "pending", column: "write", find: "Queued", replace: "Pueued"))
        replica = try await Replica.open(at: directory)
        defer { replica.close() }
        #expect(replica.pendingWrites.count == 1)
        let rejected = try replica.rejectedWrites()
        #expect(rejected.map(\.reason) == [.damagedOnDevice] && rejected.map(\.code) == [.dataLoss], "\(rejected)")
        #expect(replica.damageFound.map(\.kind) == [.writeTakenAside], "\(replica.damageFound)")
        #expect(try replica.chordsets().chordsets.map(\.title) == ["Alpha", "Bravo", "Charlie", "Next"])
        _ = try await replica.sync(with: Self.client(server))
        #expect(try server.store.chordsets().map(\.title) == ["Alpha", "Bravo", "Charlie", "Next"])
    }

    @Test("each copied record comes with its chain seed and is checked as the server checks its log, other stores' events between them; a record changed behind its row's checksum is still found")
    func chainSeeds() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        _ = try await server.store.createStore("other")
        for index in 0..<6 {
            _ = try await server.store.execute(.addChordset(AddChordset(title: "Song \(index)")))
            if index % 2 == 0 { _ = try await server.store.execute(.addChordset(AddChordset(title: "elsewhere")), context: CommandContext(store: "other")) }
        }
        let directory = Self.directory()
        var replica = try await Replica.open(at: directory, store: "default")
        _ = try await replica.sync(with: Self.client(server))
        replica.close()
        let events = directory.appendingPathComponent("events.sqlite")
        let seeds = try ReplicaFiles.column("chain_seed", of: "events", in: events)
        #expect(seeds.count == 6 && seeds.allSatisfy { !$0.isNull }, "\(seeds)")
        #expect(try ReplicaFiles.damage(events, table: "events", column: "record", find: "Song 3", replace: "Song 8", rechecksum: true))
        replica = try await Replica.open(at: directory)
        defer { replica.close() }
        #expect(replica.resyncReason?.contains("checksum chain") == true, "\(String(describing: replica.resyncReason))")
        _ = try await replica.sync(with: Self.client(server))
        #expect(try replica.chordsets().chordsets.map(\.title) == (0..<6).map { "Song \($0)" })
    }

    @Test("a feed message splits into the stored record and its seed only after a checksum trailer")
    func chainSeedSplit() throws {
        let recorded = RecordedEvent(
            sequence: 1, epoch: 1, timestamp: Instant(microsecondsSince1970: 1), session: "s", commandID: "c",
            event: .chordsetRenamed(id: UUID(), title: "x", previousTitle: "w"), checksum: 0)
        let (record, checksum) = RecordCodec.encode(recorded, previousChecksum: 42)
        let plain = RecordCodec.splitChainSeed(record)
        #expect(plain.record == record && plain.seed == nil)
        let seeded = record.withUnsafeBytes { RecordCodec.withChainSeed($0, seed: 42) }
        let split = RecordCodec.splitChainSeed(seeded)
        #expect(split.record == record && split.seed == 42)
        #expect(try split.record.withUnsafeBytes { try RecordCodec.verify($0, sequence: 1, previousChecksum: 42) } == checksum)
    }

    @Test("a dropped copy keeps the store's identity (it is in the queue's file): a store deleted and created again meanwhile is refused, never merged into")
    func droppedCopyKeepsTheStore() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        _ = try await server.store.createStore("songs")
        _ = try await server.store.execute(.addChordset(AddChordset(title: "Alpha")), context: CommandContext(store: "songs"))
        let client = Client(host: "127.0.0.1", port: server.port, retry: .once, store: "songs")
        let directory = Self.directory()
        var replica = try await Replica.open(at: directory, store: "songs")
        _ = try await replica.sync(with: client)
        try replica.addChordset(AddChordset(title: "Queued"))
        replica.close()
        #expect(try ReplicaFiles.damage(directory.appendingPathComponent("events.sqlite"), table: "events", column: "record", find: "Alpha", replace: "Blpha"))
        _ = try await server.store.deleteStore("songs")
        _ = try await server.store.createStore("songs")
        replica = try await Replica.open(at: directory)
        defer { replica.close() }
        #expect(replica.damageFound.map(\.kind) == [.copyDropped])
        let refused = await #expect(throws: ReplicaError.self) { _ = try await replica.sync(with: client) }
        #expect(refused?.code == .storeReplaced)
        #expect(replica.pendingWrites.count == 1)
        #expect(try server.store.chordsets(store: "songs").isEmpty)
    }

    @Test("a damaged value of the description that can be made again is made again: the next queue key follows the keys in use")
    func damagedNextKey() async throws {
        let (server, directory) = try await Self.synced()
        defer { Task { await server.stop() } }
        var replica = try await Replica.open(at: directory)
        try replica.addChordset(AddChordset(title: "Delta"))
        replica.close()
        try ReplicaFiles.execute("UPDATE meta SET checksum = checksum + 1 WHERE name = 'next_key'", in: directory.appendingPathComponent("queue.sqlite"))
        replica = try await Replica.open(at: directory)
        defer { replica.close() }
        #expect(replica.damageFound.map(\.kind) == [.descriptionRemade], "\(replica.damageFound)")
        try replica.addChordset(AddChordset(title: "Echo"))
        #expect(Set(replica.pendingWrites.map(\.key)).count == 2)
        _ = try await replica.sync(with: Self.client(server))
        #expect(try server.store.chordsets().map(\.title) == ["Alpha", "Bravo", "Charlie", "Delta", "Echo"])
    }

    @Test("random bit flips anywhere in the copy of the events never lose a queued write or leave wrong data after a sync")
    func randomFlipsOfTheEvents() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        for index in 0..<40 { _ = try await server.store.add("Song \(index)") }
        let expected = try server.store.chordsets().map(\.title) + ["Offline"]
        var generator = SplitMix64(seed: 37)
        for round in 0..<40 {
            let directory = Self.directory()
            var replica = try await Replica.open(at: directory, store: "default")
            _ = try await replica.sync(with: Self.client(server))
            try replica.addChordset(AddChordset(title: "Offline"))
            replica.close()
            let file = directory.appendingPathComponent("events.sqlite")
            let size = try Data(contentsOf: file).count
            try ReplicaFiles.flip(file, at: Int(generator.next() % UInt64(size)), bit: Int(generator.next() % 8))
            replica = try await Replica.open(at: directory)
            #expect(replica.pendingWrites.count == 1, "round \(round): the queued write is kept")
            // The device shows the copy or nothing of it, never a changed chordset.
            let shown = try replica.chordsets().chordsets.map(\.title)
            #expect(shown.allSatisfy(expected.contains), "round \(round): \(shown.filter { !expected.contains($0) })")
            let report = try await replica.sync(with: Self.client(server))
            #expect(report.pushed == 1, "round \(round)")
            #expect(try replica.chordsets().chordsets.map(\.title) == (try server.store.chordsets().map(\.title)), "round \(round)")
            replica.close()
            // Each round's write is confirmed; the next round expects one more.
            _ = try await server.store.execute(.deleteChordset(id: try #require(server.store.chordsets().last?.id)))
        }
    }
}
