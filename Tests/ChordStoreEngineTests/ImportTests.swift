import ChordStoreDomain
import ChordStoreEngine
import Foundation
import Testing

/// Moving a store by its events (`ImportEvents`): a round trip gives the same chordsets,
/// events, undo stacks and command ids; an event that does not fit the store, or a batch
/// that does not follow it, is refused and writes nothing.
@Suite("Import of exported events")
struct ImportTests {
    /// A store with every kind of event, undo and redo among them, in store `from`.
    static func history(in store: ChordStore) async throws {
        _ = try await store.createStore("from")
        let alice = CommandContext(session: "alice", commandID: "", store: "from")
        func run(_ command: Command, _ id: String = "", session: String = "alice") async throws -> RecordedEvent {
            var context = alice
            context.session = session
            context.commandID = id
            return try await store.execute(command, context: context)
        }
        guard case .chordsetAdded(let first) = try await run(.addChordset(AddChordset(title: "Verse")), "c1").event,
              case .chordsetAdded(let second) = try await run(.addChordset(AddChordset(title: "Chorus")), "c2").event else {
            Issue.record("adds did not add")
            return
        }
        _ = try await run(.addChordset(AddChordset(title: "Bridge")), session: "bob")
        _ = try await run(.renameChordset(id: first.id, title: "Intro"), "c3")
        _ = try await run(.setChordColor(chordID: second.chords[2].id, color: ChordColor(hue: 0.5, purity: 0.25, brightness: 0.75, alpha: 1)))
        _ = try await run(.setChordBPM(chordID: second.chords[3].id, bpm: 96))
        _ = try await run(.setControlsChord(SetControlsChord(bpm: 100, color: ChordColor(hue: 0, purity: 0, brightness: 1, alpha: 1))))
        _ = try await run(.moveChordset(id: second.id, toIndex: 0))
        _ = try await run(.undo)
        _ = try await run(.undo)
        _ = try await run(.redo)
        _ = try await run(.deleteChordset(id: first.id), session: "bob")
        _ = try await run(.deleteAll, session: "carol")
        _ = try await run(.undo, session: "carol")
        _ = try await run(.addChordset(AddChordset(title: "Coda")), "c4")
    }

    static func events(_ store: ChordStore, _ name: String) throws -> [RecordedEvent] {
        try store.events(from: 1, limit: 10_000, store: name)
    }

    @Test("export then import into a new store, in batches of 5, gives the same chordsets, events, sessions and command ids", arguments: EngineKind.allCases)
    func roundTrip(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        try await Self.history(in: store)
        let exported = try Self.events(store, "from")
        _ = try await store.createStore("to")
        var start = 0
        while start < exported.count {
            let batch = Array(exported[start..<min(start + 5, exported.count)])
            let imported = try await store.importEvents(batch, store: "to")
            #expect(imported.sequence == batch.last?.sequence)
            start += 5
        }
        let copied = try Self.events(store, "to")
        #expect(copied.count == exported.count)
        for (a, b) in zip(exported, copied) {
            #expect(a.sequence == b.sequence && a.timestamp == b.timestamp && a.session == b.session && a.commandID == b.commandID
                && a.mark == b.mark && a.event == b.event, "event \(a.sequence) differs")
        }
        #expect(try store.chordsets(order: .index, store: "to") == store.chordsets(order: .index, store: "from"))
        #expect(try store.controlsChord(store: "to") == store.controlsChord(store: "from"))
        for session in ["alice", "bob", "carol"] {
            #expect(try store.session(session, store: "to") == store.session(session, store: "from"))
        }
        // A command id of the export answers in the new store with its original event.
        let repeated = try await store.execute(.addChordset(AddChordset(title: "Verse")), context: CommandContext(commandID: "c1", store: "to"))
        #expect(repeated.sequence == 1)
        // The imported store undoes as the original would.
        let undone = try await store.execute(.undo, context: CommandContext(session: "alice", store: "to"))
        let original = try await store.execute(.undo, context: CommandContext(session: "alice", store: "from"))
        #expect(undone.event == original.event)
        if kind != .inMemory { #expect(try store.verify().isSound) }
    }

    @Test("an import that does not follow the store, or holds an event that does not fit it, is refused whole", arguments: EngineKind.allCases)
    func refusals(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        try await Self.history(in: store)
        let exported = try Self.events(store, "from")
        _ = try await store.createStore("to")
        func refused(_ events: [RecordedEvent], _ code: ChordStoreError.Code, _ text: String) async {
            let before = (try? store.lastLogSequence()) ?? 0
            do {
                _ = try await store.importEvents(events, store: "to")
                Issue.record("an import was taken that should not be: \(text)")
            } catch {
                #expect(error.code == code && error.message.contains(text), "\(error)")
            }
            #expect((try? store.lastLogSequence()) == before, "a refused import wrote something")
        }
        await refused(Array(exported[1...3]), .failedPrecondition, "does not follow")
        var renamed = exported[3]
        guard case .chordsetRenamed(let id, let title, _) = renamed.event else { Issue.record("event 4 is no rename"); return }
        renamed.event = .chordsetRenamed(id: id, title: title, previousTitle: "something else")
        await refused(Array(exported[0..<3]) + [renamed], .invalidArgument, "says the title was")
        var missing = exported[3]
        missing.event = .chordsetRenamed(id: UUID(), title: "x", previousTitle: "y")
        await refused(Array(exported[0..<3]) + [missing], .invalidArgument, "does not exist")
        var server = exported[0]
        server.event = .store(.created(id: 9, name: "sneaky"))
        await refused([server], .invalidArgument, "whole server")
        var badColor = exported[4]
        if case .chordColorSet(let chord, let chordset, _, let previous) = badColor.event {
            badColor.event = .chordColorSet(chordID: chord, chordsetID: chordset, color: ChordColor(hue: 2, purity: 0, brightness: 0, alpha: 1), previous: previous)
        }
        await refused(Array(exported[0..<4]) + [badColor], .invalidArgument, "outside 0...1")
        var early = exported[1]
        early.timestamp = Instant(microsecondsSince1970: exported[0].timestamp.microsecondsSince1970 - 1_000_000)
        await refused(Array(exported[0..<1]) + [early], .invalidArgument, "before the event before it")
        var stray = exported[8]
        stray.mark = .undoes(1)
        await refused(Array(exported[0..<8]) + [stray], .invalidArgument, "not session alice's next change to undo")
        var future = exported[1]
        future.timestamp = Instant(microsecondsSince1970: Instant.now.microsecondsSince1970 + 3_600_000_000)
        await refused(Array(exported[0..<1]) + [future], .invalidArgument, "later than this server's clock allows")
        var duplicate = exported[2]
        duplicate.commandID = "c1"
        await refused(Array(exported[0..<2]) + [duplicate], .invalidArgument, "which an earlier event has")
        // After all that, the whole export is still taken.
        let imported = try await store.importEvents(exported, store: "to")
        #expect(imported.sequence == exported.last?.sequence)
    }

    @Test("an imported undo of a delete-all is refused when a chord id it would put back is in use again", arguments: EngineKind.allCases)
    func restoreOverReusedChordIDs(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let original = try await store.add("Kept")
        let deleteAll = try await store.execute(.deleteAll)
        _ = try await store.createStore("to")
        let head = try await store.importEvents(Self.events(store, StoreName.default), store: "to")
        #expect(head.sequence == 2)
        // A chordset reusing a chord id of the deleted one, then the undo of the delete-all.
        var reused = original
        reused.id = UUID()
        reused.index = 0
        for position in 1..<8 { reused.chords[position].id = UUID() }
        let now = Instant.now
        let add = RecordedEvent(sequence: 3, epoch: 1, timestamp: now, session: "x", commandID: "", event: .chordsetAdded(reused), checksum: 0)
        let restore = RecordedEvent(
            sequence: 4, epoch: 1, timestamp: now, session: "local", commandID: "",
            event: .allRestored(deletedAt: deleteAll.sequence, count: 1), checksum: 0, mark: .undoes(deleteAll.sequence))
        do {
            _ = try await store.importEvents([add, restore], store: "to")
            Issue.record("an undo putting back a chord id in use was taken")
        } catch {
            #expect(error.code == .invalidArgument && error.message.contains("chord id"), "\(error)")
        }
        #expect(try store.lastSequence(store: "to") == 2)
    }

    @Test("a follower refuses imports")
    func follower() async throws {
        let store = ChordStore.inMemory()
        store.acceptsCommands = false
        let event = RecordedEvent(
            sequence: 1, epoch: 1, timestamp: .now, session: "s", commandID: "", event: .allDeleted(count: 0), checksum: 0)
        await #expect(throws: ChordStoreError.self) { try await store.importEvents([event]) }
    }
}
