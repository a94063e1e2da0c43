@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreServer
import ChordStoreWire
import Foundation
import SwiftProtobuf
import TestSupport
import Testing

/// Stores over the wire: the store methods, the call's `store` field, and isolation as a
/// client sees it (reads, commands, the change feed, live queries).
@Suite("Stores over the wire")
struct StoreServerTests {
    @Test("CreateStore, ListStores (paged), GetStoreInfo and DeleteStore, with their refusals")
    func storeMethods() async throws {
        let server = try await TestServer.start(durable: true)
        defer { Task { await server.stop() } }
        let client = Client(host: "127.0.0.1", port: server.port)
        defer { Task { await client.close() } }
        for name in ["b", "a", "c.d"] { _ = try await client.createStore(name) }
        let exists = await #expect(throws: ClientError.self) { try await client.createStore("a") }
        #expect(exists?.code == .alreadyExists)
        let bad = await #expect(throws: ClientError.self) { try await client.createStore("A!") }
        #expect(bad?.code == .invalidArgument)
        #expect(bad?.message.contains("1–64 characters of a-z, 0-9") == true)

        var names: [String] = []
        var after: String?
        repeat {
            let page = try await client.stores(after: after, limit: 2)
            #expect(page.stores.count <= 2)
            names += page.stores.map(\.name)
            after = page.next
        } while after != nil
        #expect(names == ["default", "a", "b", "c.d"])

        let inA = Client(host: "127.0.0.1", port: server.port, store: "a")
        defer { Task { await inA.close() } }
        _ = try await inA.execute(.addChordset(AddChordset(title: "one")))
        let info = try await inA.storeInfo()
        #expect(info.name == "a" && info.chordsets == 1 && info.chords == 8 && info.headSequence == 1 && info.created != nil)
        let deleted = try await client.deleteStore("a")
        #expect(deleted > 0)
        let gone = await #expect(throws: ClientError.self) { try await inA.chordsets() }
        #expect(gone?.code == .notFound)
        let keep = await #expect(throws: ClientError.self) { try await client.deleteStore("default") }
        #expect(keep?.code == .failedPrecondition)
        let missing = await #expect(throws: ClientError.self) { try await client.storeInfo("zzz") }
        #expect(missing?.code == .notFound)
    }

    @Test("a call's store field picks its store: reads, commands, undo, the feed and live queries see that store only")
    func isolation() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let admin = Client(host: "127.0.0.1", port: server.port)
        _ = try await admin.createStore("a")
        _ = try await admin.createStore("b")
        let a = Client(host: "127.0.0.1", port: server.port, store: "a")
        let b = Client(host: "127.0.0.1", port: server.port, store: "b")
        let plain = Client(host: "127.0.0.1", port: server.port)  // today's clients: store default
        defer { Task { await a.close(); await b.close(); await plain.close(); await admin.close() } }

        let feedOfA = a.subscribe(from: 1)
        var updates = b.watch(ChordsetQuery()).makeAsyncIterator()
        let initial = try #require(try await updates.next())
        #expect(initial.isInitial && initial.chordsets.isEmpty)

        let x = try await a.execute(.addChordset(AddChordset(title: "X")))
        let z = try await b.execute(.addChordset(AddChordset(title: "Z")))
        #expect(x.sequence == 1 && z.sequence == 1)
        #expect(try await b.chordsets().map(\.title) == ["Z"])
        #expect(try await plain.chordsets().isEmpty)
        // a's id means nothing in b.
        let xID = try #require(x.event.chordsetID)
        #expect(try await b.chordset(xID) == nil)
        let hijack = await #expect(throws: ClientError.self) { try await b.renameChordset(xID, to: "mine") }
        #expect(hijack?.code == .notFound)
        // Undo in a leaves b alone.
        _ = try await a.execute(.addChordset(AddChordset(title: "Y")), options: WriteOptions(session: "s"))
        _ = try await a.undo(options: WriteOptions(session: "s"))
        #expect(try await a.chordsets().map(\.title) == ["X"])
        #expect(try await b.chordsets().map(\.title) == ["Z"])

        // The feed of a: a's three events, never b's.
        var seen: [UInt64] = []
        for try await envelope in feedOfA {
            #expect(envelope.store == 1)
            seen.append(envelope.sequence)
            if seen.count == 3 { break }
        }
        #expect(seen == [1, 2, 3])
        // b's live query saw Z only.
        let update = try #require(try await updates.next())
        #expect(update.chordsets.map(\.title) == ["Z"] && update.deltas.count == 1)

        // A store the server does not have, or a name against the rules.
        let nowhere = Client(host: "127.0.0.1", port: server.port, store: "nowhere")
        let unknown = await #expect(throws: ClientError.self) { try await nowhere.profile() }
        #expect(unknown?.code == .notFound)
        let invalid = Client(host: "127.0.0.1", port: server.port, store: "No Such")
        let refused = await #expect(throws: ClientError.self) { try await invalid.profile() }
        #expect(refused?.code == .invalidArgument)
        // Methods of the whole server ignore the field.
        _ = try await invalid.health()
        await nowhere.close()
        await invalid.close()
    }

    @Test("a stream stays with its store: deleting the store ends it with NOT_FOUND, even when the name is created again")
    func streamEndsWithItsStore() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        try await server.store.createStore("gone")
        try await server.store.execute(.addChordset(AddChordset(title: "old")), context: CommandContext(store: "gone"))
        let connection = try await Connection.connect(host: "127.0.0.1", port: server.port, store: "gone")
        defer { Task { await connection.close() } }
        let stream = try await connection.stream(.subscribe, Chordstore_V1_SubscribeRequest.with { $0.fromSequence = 1 }, as: Chordstore_V1_EventEnvelope.self)
        var events = stream.makeAsyncIterator()
        #expect(try await events.next()?.sequence == 1)
        try await server.store.deleteStore("gone")
        try await server.store.createStore("gone")
        try await server.store.execute(.addChordset(AddChordset(title: "new 1")), context: CommandContext(store: "gone"))
        try await server.store.execute(.addChordset(AddChordset(title: "new 2")), context: CommandContext(store: "gone"))
        let ended = await #expect(throws: ClientError.self) {
            while let envelope = try await events.next() { Issue.record("the stream went on with event \(envelope.sequence) of another store") }
        }
        #expect(ended?.code == .notFound)
        #expect(ended?.message.contains("was deleted while this stream was open") == true)
    }
}
