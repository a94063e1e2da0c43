@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreReplica
import Foundation
import Testing

/// A replica read by another process than the app's (an app extension, a widget):
/// `Replica.openForReading` beside the app's open replica.
@Suite("Device replicas read by an app extension")
struct ReplicaReaderTests {
    static func client(_ server: TestServer) -> Client { Client(host: "127.0.0.1", port: server.port, retry: .once) }

    static func titles(_ replica: Replica) throws -> [String] { try replica.chordsets().chordsets.map(\.title) }

    @Test("an extension reads the replica the app has open (no inUse): its copied events and queued writes; a refresh shows what the app did since; writes and syncs are refused")
    func readerBesideTheApp() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alpha = try await server.store.add("Alpha")
        _ = try await server.store.add("Bravo")
        let directory = ViewCheckpointTests.directory()
        let app = try await Replica.open(at: directory, store: "default")
        defer { app.close() }
        _ = try await app.sync(with: Self.client(server))
        try app.addChordset(AddChordset(title: "Queued"))

        let widget = try await Replica.openForReading(at: directory)
        defer { widget.close() }
        #expect(widget.isReadOnly && !app.isReadOnly)
        #expect(try Self.titles(widget) == ["Alpha", "Bravo", "Queued"])
        #expect(widget.pendingWrites.count == 1 && widget.lastSequence == 2)
        let write = #expect(throws: ChordStoreError.self) { try widget.addChordset(AddChordset(title: "Not here")) }
        #expect(write?.code == .failedPrecondition && write?.reason == .readOnlyReplica)
        let sync = await #expect(throws: ReplicaError.self) { _ = try await widget.sync(with: Self.client(server)) }
        #expect(sync?.code == .readOnly)
        #expect(try Self.titles(app) == ["Alpha", "Bravo", "Queued"], "the app's view is untouched")

        // The app goes on; the extension sees it when it refreshes.
        _ = try await server.store.add("Charlie")
        try app.renameChordset(alpha.id, to: "Alpha 2")
        _ = try await app.sync(with: Self.client(server))
        #expect(try Self.titles(widget) == ["Alpha", "Bravo", "Queued"])
        try widget.refresh()
        #expect(try Self.titles(widget) == (try Self.titles(app)))
        #expect(widget.pendingWrites.isEmpty && widget.lastSequence == app.lastSequence)
        #expect(try widget.verifyCopy() == nil)
    }

    @Test("a reader opens from the app's saved view and folds the events after it, and reading, refreshing and closing change none of the app's files (the saved view behind the copy included)")
    func readerWritesNothing() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        for title in ["Alpha", "Bravo", "Charlie"] { _ = try await server.store.add(title) }
        let directory = ViewCheckpointTests.directory()
        var app = try await Replica.open(at: directory, store: "default", options: ViewCheckpointTests.options)
        _ = try await app.sync(with: Self.client(server))
        app.close()
        let early = try Data(contentsOf: ViewCheckpointTests.checkpoint(directory))
        app = try await Replica.open(at: directory, options: ViewCheckpointTests.options)
        _ = try await server.store.add("Delta")
        _ = try await app.sync(with: Self.client(server))
        try app.addChordset(AddChordset(title: "Queued"))
        app.close()
        // As if the app had been stopped before it saved the view again.
        try early.write(to: ViewCheckpointTests.checkpoint(directory))
        let files = ["queue.sqlite", "events.sqlite", "view.checkpoint"]
        func contents() throws -> [Data] { try files.map { try Data(contentsOf: directory.appendingPathComponent($0)) } }
        let before = try contents()

        let widget = try await Replica.openForReading(at: directory, options: ViewCheckpointTests.options)
        #expect(widget.savedViewHead == 3 && widget.lastSequence == 4)
        #expect(try Self.titles(widget) == ["Alpha", "Bravo", "Charlie", "Delta", "Queued"])
        try widget.refresh()
        try widget.flush()
        widget.close()
        #expect(try contents() == before)
        // The app opens the directory as before.
        let reopened = try await Replica.open(at: directory)
        defer { reopened.close() }
        #expect(reopened.pendingWrites.count == 1)
    }

    @Test("opening for reading a directory the app has not made is noReplica; one of format 1 is formatNeedsMove (the app moves it)")
    func readerRefusals() async throws {
        let empty = ViewCheckpointTests.directory()
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let none = #expect(throws: ReplicaError.self) { _ = try Replica.openForReading(at: empty) }
        #expect(none?.code == .noReplica)
        try Data("not lmdb".utf8).write(to: empty.appendingPathComponent("data.mdb"))
        let old = #expect(throws: ReplicaError.self) { _ = try Replica.openForReading(at: empty) }
        #expect(old?.code == .formatNeedsMove)
    }
}
