import ChordStoreDomain
import ChordStoreEngine
import Foundation
import Testing

/// Stores: isolated collections on one log. Each store's views are a replay of its own
/// events, the same as a server holding only that store would have, and nothing of one
/// store is seen or changed through another.
@Suite("Store isolation")
struct StoreIsolationTests {
    /// A command made deterministic: an accepted add or controls chord with the ids,
    /// colours and creation date its event recorded, so that another server, whose
    /// generator draws differently, records the same event.
    static func explicit(_ command: Command, recorded: RecordedEvent?) -> Command {
        switch (command, recorded?.event) {
        case (.addChordset, .chordsetAdded(let chordset)?) where recorded?.mark == nil:
            return .addChordset(AddChordset(
                id: chordset.id, title: chordset.title, creationDate: chordset.creationDate,
                chords: chordset.chords.map { ChordSpec(id: $0.id, position: $0.position, bpm: $0.bpm, color: $0.color) }))
        case (.setControlsChord(let set), .controlsChordSet(let chord?, _)?) where recorded?.mark == nil:
            return .setControlsChord(SetControlsChord(id: chord.id, bpm: set.bpm, color: set.color))
        default:
            return command
        }
    }

    /// What a store shows of itself: its chordsets, controls chord, events and sessions.
    struct StoreView: Equatable {
        var state: StateSnapshot
        var events: [String]
        var sessions: [SessionState]

        init(_ store: ChordStore, _ name: String) throws {
            state = StateSnapshot(chordsets: try store.chordsets(order: .index, store: name), controlsChord: try store.controlsChord(store: name))
            events = try store.events(from: 1, limit: .max, store: name).map {
                "\($0.sequence) \($0.session) \(String(describing: $0.mark)) \($0.event)"
            }
            sessions = try ["s1", "s2"].map { try store.session($0, store: name) }
        }
    }

    @Test("random commands over random stores: each store equals a replay of its events and a server of its own", arguments: EngineKind.allCases, [21, 22] as [UInt64])
    func isolationProperty(kind: EngineKind, seed: UInt64) async throws {
        let store = try kind.makeStore(seed: seed)
        defer { store.close() }
        var g = SplitMix64(seed: seed)
        var names = [StoreName.default]
        for _ in 0..<3 {
            let name = "s\(g.next() % 1_000).\(["a", "b_", "c-d"][Int(g.next() % 3)])"
            if !names.contains(name) {
                try await store.createStore(name)
                names.append(name)
            }
        }
        var sent: [String: [(Command, CommandContext)]] = [:]
        for step in 0..<320 {
            let name = names[Int(g.next() % UInt64(names.count))]
            let live = StateSnapshot(chordsets: try store.chordsets(order: .index, store: name), controlsChord: try store.controlsChord(store: name))
            let session = g.next() % 2 == 0 ? "s1" : "s2"
            let command: Command = switch g.next() % 10 {
            case 0: .undo
            case 1: .redo
            default: ReplayPropertyTests.randomCommand(&g, chordsets: live.chordsets, controls: live.controlsChord)
            }
            // The same command ids in every store (de-duplication is per store), and
            // sometimes a repeat of an earlier one (a retry).
            let count = sent[name, default: []].count
            let commandID = count > 0 && g.next() % 10 == 0 ? "c\(g.next() % UInt64(count))" : "c\(count)"
            let context = CommandContext(session: session, commandID: commandID, store: name)
            var recorded: RecordedEvent?
            do {
                let event = try await store.execute(command, context: context)
                #expect(event.store == (try store.storeID(name)), "step \(step): recorded in another store")
                recorded = event
            } catch {
                #expect(error.code != .internal && error.code != .dataLoss, "step \(step): \(error)")
            }
            sent[name, default: []].append((Self.explicit(command, recorded: recorded), context))
        }
        let report = try store.verify()
        #expect(report.isSound, "\(String(describing: report.problem))")
        for name in names {
            // The store's own events, replayed alone, give its views.
            let replayed = try StateSnapshot(of: InMemoryState(replaying: try store.events(from: 1, limit: .max, store: name).map(\.event)))
            let live = StateSnapshot(chordsets: try store.chordsets(order: .index, store: name), controlsChord: try store.controlsChord(store: name))
            #expect(replayed.firstDifference(from: live) == nil, "store \(name): replay vs live")
            // A server holding this store alone, sent the same commands, shows the same.
            let alone = try kind.makeStore(seed: seed &+ 99)
            defer { alone.close() }
            for (command, context) in sent[name, default: []] {
                var single = context
                single.store = StoreName.default
                _ = try? await alone.execute(command, context: single)
            }
            let expected = try StoreView(alone, StoreName.default)
            let actual = try StoreView(store, name)
            #expect(actual == expected, "store \(name) differs from a server of its own")
        }
    }

    @Test("nothing of one store is seen or changed through another: ids, undo, feed, as-of, command ids", arguments: EngineKind.allCases)
    func crossStoreAccess(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        try await store.createStore("a")
        try await store.createStore("b")
        let inA = try await store.execute(.addChordset(AddChordset(title: "in a")), context: CommandContext(session: "s", commandID: "x", store: "a"))
        guard case .chordsetAdded(let chordset) = inA.event else { Issue.record("not an add"); return }
        // By id: b does not hold a's chordset, nor its chords.
        #expect(try store.chordset(chordset.id, store: "b") == nil)
        #expect(try store.chord(chordset.chords[0].id, store: "b") == nil)
        await #expect(throws: ChordStoreError.self) {
            try await store.execute(.renameChordset(id: chordset.id, title: "hijacked"), context: CommandContext(session: "s", store: "b"))
        }
        #expect(try store.chordset(chordset.id, store: "a")?.title == "in a")
        // The same command id in b is b's own: applied, not answered with a's event.
        let inB = try await store.execute(.addChordset(AddChordset(title: "in b")), context: CommandContext(session: "s", commandID: "x", store: "b"))
        #expect(inB.sequence == 1 && inA.sequence == 1, "each store counts its own events")
        #expect(inB.logSequence > inA.logSequence)
        // Undo in b, same session, undoes b's change only.
        try await store.execute(.undo, context: CommandContext(session: "s", store: "b"))
        #expect(try store.chordsets(store: "b").isEmpty)
        #expect(try store.chordsets(store: "a").map(\.title) == ["in a"])
        // The feed of a holds a's events only; b's holds b's.
        #expect(try store.events(store: "a").map(\.sequence) == [1])
        #expect(try store.events(store: "b").map(\.sequence) == [1, 2])
        // Reads of the past count in the store's own sequence.
        #expect(try store.state(asOf: .sequence(1), store: "b").chordsets(order: .index, limit: nil).map(\.title) == ["in b"])
        #expect(throws: ChordStoreError.self) { try store.state(asOf: .sequence(2), store: "a") }
        // Expected revisions are the store's: a's chordset is at a's revision 1.
        #expect(try store.revision(.chordset(chordset.id), store: "a") == 1)
        #expect(try store.revision(.chordset(chordset.id), store: "b") == 0)
        // Store default saw nothing.
        #expect(try store.profile().chordsets == 0)
        #expect(try store.events().isEmpty)
        #expect(try store.verify().isSound)
    }

    @Test("names are checked, default always exists, and the limit on stores holds", arguments: EngineKind.allCases)
    func rules(kind: EngineKind) async throws {
        let store = try kind.makeStore { $0.maxStores = 3 }
        defer { store.close() }
        for bad in ["", "Upper", "has space", "slash/", String(repeating: "a", count: 65), "é"] {
            let error = await #expect(throws: ChordStoreError.self) { try await store.createStore(bad) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("1–64 characters") == true)
            if !bad.isEmpty {  // a read naming no store reads default
                #expect(throws: ChordStoreError.self) { try store.chordsets(store: bad) }
            }
        }
        try await store.createStore(String(repeating: "a", count: 64))
        try await store.createStore("x.y_z-0")
        let full = await #expect(throws: ChordStoreError.self) { try await store.createStore("third") }
        #expect(full?.code == .resourceExhausted)
        let again = await #expect(throws: ChordStoreError.self) { try await store.createStore("x.y_z-0") }
        #expect(again?.code == .alreadyExists)
        let keep = await #expect(throws: ChordStoreError.self) { try await store.deleteStore("default") }
        #expect(keep?.code == .failedPrecondition)
        let missing = await #expect(throws: ChordStoreError.self) {
            try await store.execute(.addChordset(AddChordset()), context: CommandContext(store: "nowhere"))
        }
        #expect(missing?.code == .notFound)
        #expect(try store.stores().map(\.name) == ["default", String(repeating: "a", count: 64), "x.y_z-0"])
        #expect(try store.stores(after: "default", limit: 1).map(\.name) == [String(repeating: "a", count: 64)])
        #expect(try store.stores(after: String(repeating: "a", count: 64), limit: 5).map(\.name) == ["x.y_z-0"])
    }

    @Test("a deleted store's views go, its events stay in the log, and its name starts empty when reused", arguments: EngineKind.allCases)
    func deleteAndReuse(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        try await store.createStore("gone")
        let first = try await store.createStore("kept")
        try await store.execute(.addChordset(AddChordset(title: "old")), context: CommandContext(session: "s", commandID: "k", store: "gone"))
        try await store.execute(.addChordset(AddChordset(title: "stays")), context: CommandContext(store: "kept"))
        let deleted = try await store.deleteStore("gone")
        #expect(throws: ChordStoreError.self) { try store.chordsets(store: "gone") }
        let reborn = try await store.createStore("gone")
        #expect(reborn.id > first.id)
        #expect(reborn.chordsets == 0 && reborn.headSequence == 0)
        #expect(try store.chordsets(store: "gone").isEmpty)
        #expect(try store.events(store: "gone").isEmpty)
        #expect(try store.session("s", store: "gone").undoTarget == nil)
        // The old command id means nothing to the new store.
        let fresh = try await store.execute(.addChordset(AddChordset(title: "new")), context: CommandContext(session: "s", commandID: "k", store: "gone"))
        #expect(fresh.sequence == 1)
        // The log keeps the old store's events and the deletion.
        let log = try store.logEvents(from: 1, limit: 100)
        #expect(log.contains { if case .chordsetAdded(let c) = $0.event { c.title == "old" } else { false } })
        #expect(log.contains { $0.logSequence == deleted.logSequence && $0.event == .store(.deleted(id: 1, name: "gone")) })
        #expect(try store.chordsets(store: "kept").map(\.title) == ["stays"])
        #expect(try store.verify().isSound)
        try await store.rebuild()
        #expect(try store.chordsets(store: "gone").map(\.title) == ["new"])
        #expect(try store.verify().isSound)
    }

    @Test("adds to 50 stores at once share commits, and each store counts from 1")
    func oneWriterForAllStores() async throws {
        let store = try EngineKind.lmdb.makeStore()
        defer { store.close() }
        for i in 0..<50 { try await store.createStore("s\(i)") }
        let before = store.statistics
        try await withThrowingTaskGroup(of: RecordedEvent.self) { group in
            for i in 0..<50 {
                group.addTask { try await store.execute(.addChordset(AddChordset(title: "t")), context: CommandContext(store: "s\(i)")) }
            }
            for try await recorded in group { #expect(recorded.sequence == 1) }
        }
        let after = store.statistics
        #expect(after.events - before.events == 50)
        #expect(after.commits - before.commits < 50, "\(after.commits - before.commits) commits for 50 adds to 50 stores: no batching")
    }

    @Test("stores and their views survive a reopen, and a rebuild gives the same views")
    func durable() async throws {
        let directory = temporaryDirectory()
        let expected: [StoreInfo]
        do {
            let store = try ChordStore.open(at: directory)
            try await store.createStore("a")
            try await store.createStore("b")
            for i in 0..<5 {
                try await store.execute(.addChordset(AddChordset(title: "a\(i)")), context: CommandContext(store: "a"))
                try await store.execute(.addChordset(AddChordset(title: "b\(i)")), context: CommandContext(store: "b"))
            }
            try await store.execute(.undo, context: CommandContext(session: "local", store: "a"))
            try await store.deleteStore("b")
            expected = try store.stores()
            store.close()
        }
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        #expect(try store.stores() == expected)
        #expect(try store.chordsets(store: "a").count == 4)
        try await store.rebuild()
        #expect(try store.stores() == expected)
        #expect(try store.verify().isSound)
    }

    @Test("commits wake waiters by log position, whatever store they went to", arguments: EngineKind.allCases)
    func wakeUpsCountLogPositions(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        try await store.createStore("a")
        for _ in 0..<3 { try await store.execute(.addChordset(AddChordset()), context: CommandContext(store: "a")) }
        #expect(try store.lastLogSequence() == 4 && store.lastSequence(store: "a") == 3)
        // The log holds event 4: a wait after 3 returns at once (a notifier counting the
        // store's sequence, 3, would sleep the whole timeout).
        let started = ContinuousClock.now
        await store.waitForCommit(after: 3, timeout: .seconds(20))
        #expect(ContinuousClock.now - started < .seconds(10))
    }
}
