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

        let replica = try Replica.open(at: Self.directory(), store: "songs")
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
        let replica = try Replica.open(at: Self.directory(), store: "default")
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

    @Test("a write the server holds back for now (the store's chordset limit) stays queued, and the others' changes still come; once there is room it goes")
    func heldBackWrite() async throws {
        var options = ChordStore.Options()
        options.limits.maxChordsets = 1
        let store = try ChordStore.open(at: Self.directory(), options: options)
        let server = try await TestServer.start(store: store)
        defer { Task { await server.stop() } }
        let replica = try Replica.open(at: Self.directory(), store: "default")
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
}
