@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplica
import ChordStoreServer
import ChordStoreWire
import Foundation
import Testing

/// Sync keeps the user's intent (issue 37's cases, each reproduced first from outside):
/// a refusal of the credential is not a refusal of the write, and a write the server can
/// never take does not stop the device from seeing the others' changes.
@Suite("Device replicas keep the user's intent")
struct ReplicaIntentTests {
    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("replica-intent-\(UUID().uuidString)")
    }

    static func token(_ admin: Client, store: String, role: Chordstore_V1_TokenRole) async throws -> String {
        let created: Chordstore_V1_CreatedToken = try await admin.call(.createToken, Chordstore_V1_CreateTokenRequest.with {
            $0.role = role
            $0.store = store
        })
        return created.secret
    }

    @Test("a read-only token, or another store's, stops the sync as accessRevoked with every queued write kept; the right token then sends them")
    func credentialRefusalsKeepTheQueue() async throws {
        let server = try await TestServer.start(durable: true, security: SecurityTests.secured)
        defer { Task { await server.stop() } }
        let admin = Client(host: "127.0.0.1", port: server.port, retry: .once, credentials: ClientCredentials(token: SecurityTests.adminSecret))
        _ = try await admin.createStore("songs")
        _ = try await admin.createStore("other")
        let readOnly = try await Self.token(admin, store: "songs", role: .readOnly)
        let otherStore = try await Self.token(admin, store: "other", role: .readWrite)
        let readWrite = try await Self.token(admin, store: "songs", role: .readWrite)
        func client(_ token: String) -> Client {
            Client(host: "127.0.0.1", port: server.port, retry: .once, store: "songs", credentials: ClientCredentials(token: token))
        }

        let replica = try await Replica.open(at: Self.directory(), store: "songs")
        defer { replica.close() }
        try replica.addChordset(AddChordset(title: "first"))
        try replica.addChordset(AddChordset(title: "second"))
        for (name, token) in [("read-only", readOnly), ("another store's", otherStore)] {
            let refused = await #expect(throws: ReplicaError.self, "\(name) token") { _ = try await replica.sync(with: client(token)) }
            #expect(refused?.code == .accessRevoked, "\(name) token: \(String(describing: refused))")
            #expect(replica.pendingWrites.count == 2, "\(name) token: the queue is kept")
            #expect(try replica.rejectedWrites().isEmpty, "\(name) token: no write was taken as refused")
            #expect(try replica.chordsets().chordsets.map(\.title) == ["first", "second"], "\(name) token: the device still shows its writes")
        }
        let report = try await replica.sync(with: client(readWrite))
        #expect(report.pushed == 2 && report.rejected.isEmpty)
        #expect(try server.store.chordsets(store: "songs").map(\.title) == ["first", "second"])
    }

    @Test("a write larger than the server's frame limit is taken aside as rejected, FRAME_TOO_LARGE; the writes after it go, and the others' changes come")
    func undeliverableWrite() async throws {
        var limits = WireLimits()
        limits.maxFrameSize = 1_000  // an add of 8 chords with a short title is about 720 bytes, with the long one 1,476
        let server = try await TestServer.start(durable: true, limits: limits)
        defer { Task { await server.stop() } }
        _ = try await server.store.add("from another device")
        let replica = try await Replica.open(at: Self.directory(), store: "default")
        defer { replica.close() }
        try replica.addChordset(AddChordset(title: String(repeating: "🎹", count: 190)))  // 760 bytes
        try replica.addChordset(AddChordset(title: "short"))
        let client = Client(host: "127.0.0.1", port: server.port, retry: .once)
        let report = try await replica.sync(with: client)
        #expect(report.rejected.map { $0.reason } == [ErrorReason.frameTooLarge], "\(report.rejected)")
        #expect(report.pushed == 1 && replica.pendingWrites.isEmpty)
        #expect(try replica.rejectedWrites().map { $0.reason } == [ErrorReason.frameTooLarge])
        #expect(try replica.chordsets().chordsets.map(\.title) == ["from another device", "short"])
        #expect(try server.store.chordsets().map(\.title) == ["from another device", "short"])
    }

    @Test("a request of 5 MB against the default 4 MiB limit gets FRAME_TOO_LARGE: the GoAway reaches a client still writing, and the next call gets a new connection")
    func largeFrameWhileWriting() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = Client(host: "127.0.0.1", port: server.port, retry: .once)
        let huge = Chordstore_V1_GetChordsetRequest.with { $0.chordsetID = Data(count: 5 << 20) }
        let refused = await #expect(throws: ClientError.self) {
            let _: Chordstore_V1_Chordset = try await client.call(.getChordset, huge)
        }
        #expect(refused?.code == .resourceExhausted && refused?.reason == .frameTooLarge, "\(String(describing: refused))")
        #expect(try await client.profile().lastSequence == 0, "the next call works")
    }

    @Test("a write the server holds back for now (the store's chordset limit) stays queued, and the others' changes still come; once there is room it goes")
    func heldBackWrite() async throws {
        var options = ChordStore.Options()
        options.limits.maxChordsets = 1
        let store = try ChordStore.open(at: Self.directory(), options: options)
        let server = try await TestServer.start(store: store)
        defer { Task { await server.stop() } }
        let replica = try await Replica.open(at: Self.directory(), store: "default")
        defer { replica.close() }
        try replica.addChordset(AddChordset(title: "queued"))
        let other = try await server.store.add("from another device")
        let client = Client(host: "127.0.0.1", port: server.port, retry: .once)
        let held = await #expect(throws: ReplicaError.self) { _ = try await replica.sync(with: client) }
        #expect(held?.code == .writesHeld && held?.isTransient == true, "\(String(describing: held))")
        #expect(replica.lastSequence == 1, "the other device's add was copied")
        let rejected = try replica.rejectedWrites()
        #expect(replica.pendingWrites.count == 1 && rejected.isEmpty)
        #expect(Set(try replica.chordsets().chordsets.map(\.title)) == ["from another device", "queued"])
        _ = try await server.store.execute(.deleteChordset(id: other.id))
        let report = try await replica.sync(with: client)
        #expect(report.pushed == 1 && replica.pendingWrites.isEmpty)
        #expect(try server.store.chordsets().map(\.title) == ["queued"])
    }

    @Test("with the store's own token, a store deleted and created again before the replica copied any event is refused as replaced, not merged into")
    func recreatedStoreWithScopedToken() async throws {
        let server = try await TestServer.start(durable: true, security: SecurityTests.secured)
        defer { Task { await server.stop() } }
        let admin = Client(host: "127.0.0.1", port: server.port, retry: .once, credentials: ClientCredentials(token: SecurityTests.adminSecret))
        _ = try await admin.createStore("songs")
        let first = try await Self.token(admin, store: "songs", role: .readWrite)
        func client(_ token: String) -> Client {
            Client(host: "127.0.0.1", port: server.port, retry: .once, store: "songs", credentials: ClientCredentials(token: token))
        }
        let replica = try await Replica.open(at: Self.directory(), store: "songs")
        defer { replica.close() }
        let empty = try await replica.sync(with: client(first))
        #expect(empty.pulled == 0 && replica.lastSequence == 0, "nothing copied: only the store's id tells the stores apart")
        try replica.addChordset(AddChordset(title: "queued"))
        _ = try await admin.deleteStore("songs")
        _ = try await admin.createStore("songs")
        let second = try await Self.token(admin, store: "songs", role: .readWrite)
        let replaced = await #expect(throws: ReplicaError.self) { _ = try await replica.sync(with: client(second)) }
        #expect(replaced?.code == .storeReplaced, "\(String(describing: replaced))")
        #expect(replica.pendingWrites.count == 1)
        #expect(try server.store.chordsets(store: "songs").isEmpty, "nothing was merged into the new store")
        // Another store's description stays the admin's (or that store's token's).
        _ = try await admin.createStore("other")
        let other = await #expect(throws: ClientError.self) { _ = try await client(second).storeInfo("other") }
        #expect(other?.code == .permissionDenied && other?.reason == .otherStore)
    }

    @Test("a copied replica directory (a device restored from a backup) starts a session of its own: its undo never reverts the original's change; a write queued before the copy is applied once and leaves both queues; the original keeps its session")
    func copiedDirectory() async throws {
        let server = try await TestServer.start(durable: true)
        defer { Task { await server.stop() } }
        let client = Client(host: "127.0.0.1", port: server.port, retry: .once)
        let original = Self.directory()
        let copy = Self.directory()
        let session: String
        do {
            let replica = try await Replica.open(at: original, store: "default")
            defer { replica.close() }
            session = replica.session
            try replica.addChordset(AddChordset(title: "A"))
            _ = try await replica.sync(with: client)
            try replica.addChordset(AddChordset(title: "B, queued before the copy"))
        }
        try FileManager.default.copyItem(at: original, to: copy)

        let restored = try await Replica.open(at: copy)
        defer { restored.close() }
        #expect(restored.session != session, "the copy has a session of its own")
        #expect(restored.pendingWrites.count == 1, "and the original's data and queue")
        let back = try await Replica.open(at: original)
        defer { back.close() }
        #expect(back.session == session, "the original keeps its session")
        _ = try await back.sync(with: client)

        let report = try await restored.sync(with: client)
        #expect(report.rejected.isEmpty && restored.pendingWrites.isEmpty, "the write the original sent leaves the copy's queue: \(report)")
        #expect(try server.store.chordsets().map(\.title) == ["A", "B, queued before the copy"], "applied once")
        let undo = #expect(throws: ChordStoreError.self) { try restored.undo() }
        #expect(undo?.code == .failedPrecondition && undo?.reason == .nothingToUndo, "\(String(describing: undo))")

        try back.undo()
        _ = try await back.sync(with: client)
        #expect(try server.store.chordsets().map(\.title) == ["A"], "the original's undo reverts its own last change")
        _ = try await restored.sync(with: client)
        #expect(try restored.chordsets().chordsets.map(\.title) == ["A"])
    }

    @Test("an undo queued before the copy is sent by the copy under the original's session: it reverts the original's change it named, is applied once, and neither device reports it refused")
    func copiedQueuedUndo() async throws {
        let server = try await TestServer.start(durable: true)
        defer { Task { await server.stop() } }
        let client = Client(host: "127.0.0.1", port: server.port, retry: .once)
        let original = Self.directory()
        let copy = Self.directory()
        do {
            let replica = try await Replica.open(at: original, store: "default")
            defer { replica.close() }
            let song = try replica.addChordset(AddChordset(title: "Song"))
            try replica.renameChordset(song.id, to: "Song, renamed")
            _ = try await replica.sync(with: client)
            try replica.undo()  // offline: reverts the rename, queued
        }
        try FileManager.default.copyItem(at: original, to: copy)

        // The copy syncs first: its own session has nothing to undo, the original's has.
        let restored = try await Replica.open(at: copy)
        defer { restored.close() }
        #expect(restored.pendingWrites.first?.session != restored.session)
        let first = try await restored.sync(with: client)
        #expect(first.rejected.isEmpty && first.pushed == 1, "\(first)")
        #expect(try server.store.chordsets().map(\.title) == ["Song"])
        let back = try await Replica.open(at: original)
        defer { back.close() }
        let second = try await back.sync(with: client)
        #expect(second.rejected.isEmpty && back.pendingWrites.isEmpty, "\(second)")
        #expect(try server.store.chordsets().map(\.title) == ["Song"])
        let undos = try server.store.events(limit: 100).filter { if case .undoes? = $0.mark { true } else { false } }
        #expect(undos.count == 1, "applied once")
        #expect(try back.chordsets().chordsets.map(\.title) == ["Song"] && (try restored.chordsets().chordsets.map(\.title)) == ["Song"])
    }

    @Test("a queued undo whose change the server refused is refused too, never applied to another change")
    func undoOfARefusedChange() async throws {
        let server = try await TestServer.start(durable: true)
        defer { Task { await server.stop() } }
        let client = Client(host: "127.0.0.1", port: server.port, retry: .once)
        let chordset = try await server.store.add("C")
        let replica = try await Replica.open(at: Self.directory(), store: "default")
        defer { replica.close() }
        _ = try await replica.sync(with: client)
        // Offline on the device: add X, rename C, undo (the rename).
        try replica.addChordset(AddChordset(title: "X"))
        try replica.renameChordset(chordset.id, to: "C renamed")
        try replica.undo()
        #expect(Set(try replica.chordsets().chordsets.map(\.title)) == ["C", "X"])
        // Another device deletes C meanwhile.
        _ = try await server.store.execute(.deleteChordset(id: chordset.id))
        let report = try await replica.sync(with: client)
        #expect(report.pushed == 1, "only the add went")
        #expect(report.rejected.map { $0.write.command.kindName } == ["rename-chordset", "undo"], "\(report.rejected)")
        #expect(report.rejected.map { $0.reason } == [ErrorReason.chordsetNotFound, ErrorReason.nothingToUndo])
        #expect(try server.store.chordsets().map(\.title) == ["X"], "the add of X stays: the undo reverted nothing")
        #expect(try replica.chordsets().chordsets.map(\.title) == ["X"])
        #expect(replica.pendingWrites.isEmpty)
    }
}
