import ChordStoreDomain
import ChordStoreEngine
import Foundation
import Testing

/// The engine's behaviour, the same for the in-memory and the LMDB engine.
@Suite("Engine behaviour")
struct EngineBehaviourTests {
    @Test("add, get, list, chord and profile agree", arguments: EngineKind.allCases)
    func basics(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let first = try await store.add("Verse")
        let second = try await store.add("Chorus")
        #expect(try store.chordset(first.id) == first)
        #expect(try store.chordsets().map(\.id) == [first.id, second.id])
        #expect(try store.chordsets(order: .title).map(\.title) == ["Chorus", "Verse"])
        #expect(try store.chordsets(limit: 1).count == 1)
        let chord = try #require(try store.chord(second.chords[3].id))
        #expect(chord.chord == second.chords[3])
        #expect(chord.chordsetID == second.id)
        let profile = try store.profile()
        #expect(profile == Profile(chordsets: 2, chords: 16, hasControlsChord: false, lastSequence: 2))
    }

    @Test("every edit lands in the views and the log, in order", arguments: EngineKind.allCases)
    func edits(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let a = try await store.add("a")
        let b = try await store.add("b")
        let color = ChordColor(hue: 0.25, purity: 0.5, brightness: 0.75, alpha: 1)
        try await store.execute(.renameChordset(id: a.id, title: "A"))
        try await store.execute(.setChordColor(chordID: a.chords[2].id, color: color))
        try await store.execute(.setChordBPM(chordID: a.chords[2].id, bpm: 77))
        try await store.execute(.moveChordset(id: b.id, toIndex: 0))
        try await store.execute(.setControlsChord(SetControlsChord(bpm: 99, color: color)))
        let updated = try #require(try store.chordset(a.id))
        #expect(updated.title == "A")
        #expect(updated.index == 1)
        #expect(updated.chords[2].color == color)
        #expect(updated.chords[2].bpm == 77)
        #expect(try store.controlsChord()?.bpm == 99)
        #expect(try store.profile().chords == 17)
        #expect(try store.events().map(\.event.kindName) == [
            "chordset_added", "chordset_added", "chordset_renamed", "chord_color_set", "chord_bpm_set",
            "chordset_moved", "controls_chord_set",
        ])
        #expect(try store.events().map(\.sequence) == Array(1...7))
        try await store.execute(.deleteChordset(id: b.id))
        #expect(try store.chord(b.chords[0].id) == nil)
        #expect(try store.profile().chords == 9)
        try await store.execute(.deleteAll)
        #expect(try store.profile() == Profile(chordsets: 0, chords: 1, hasControlsChord: true, lastSequence: 9))
        #expect(try store.verify().isSound)
    }

    @Test("a refused command writes nothing: no event, no sequence number used", arguments: EngineKind.allCases)
    func refusedWritesNothing(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let a = try await store.add("a")
        let before = try store.liveSnapshot()
        let refusals: [Command] = [
            .renameChordset(id: a.id, title: String(repeating: "x", count: 201)),
            .setChordBPM(chordID: a.chords[0].id, bpm: 5_000),
            .deleteChordset(id: UUID()),
            .moveChordset(id: a.id, toIndex: 5),
            .addChordset(AddChordset(id: a.id)),
        ]
        for command in refusals {
            await #expect(throws: ChordStoreError.self) { try await store.execute(command) }
        }
        #expect(try store.liveSnapshot() == before)
        #expect(try store.profile().lastSequence == 1)
        let next = try await store.execute(.renameChordset(id: a.id, title: "ok"))
        #expect(next.sequence == 2)
    }

    @Test("session and command id are recorded with the event; bad metadata is refused", arguments: EngineKind.allCases)
    func metadata(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let recorded = try await store.execute(.addChordset(AddChordset()), context: CommandContext(session: "ipad-1", commandID: "cmd-42"))
        let stored = try #require(try store.events().first)
        #expect(stored == recorded)
        #expect(stored.session == "ipad-1")
        #expect(stored.commandID == "cmd-42")
        await #expect(throws: ChordStoreError.self) {
            try await store.execute(.deleteAll, context: CommandContext(session: String(repeating: "s", count: 129)))
        }
    }

    @Test("concurrent callers are all committed, each once, with sequence numbers 1...n", arguments: EngineKind.allCases)
    func concurrentCallers(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let sequences = try await withThrowingTaskGroup(of: UInt64.self) { group in
            for i in 0..<200 {
                group.addTask { try await store.execute(.addChordset(AddChordset(title: "t\(i)"))).sequence }
            }
            return try await group.reduce(into: [UInt64]()) { $0.append($1) }
        }
        #expect(sequences.sorted() == Array(1...200))
        #expect(try store.profile().chordsets == 200)
        #expect(try store.verify().isSound)
    }

    @Test("a closed store refuses commands and reads with UNAVAILABLE", arguments: EngineKind.allCases)
    func closedStore(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        store.close()
        #expect(throws: ChordStoreError(.unavailable, "the store is closed")) { try store.profile() }
        do {
            try await store.execute(.deleteAll)
            Issue.record("a closed store accepted a command")
        } catch {
            #expect(error.code == .unavailable)
        }
    }

    @Test("rebuild reproduces the same views", arguments: EngineKind.allCases)
    func rebuild(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        for i in 0..<20 { _ = try await store.add("c\(i)") }
        let ids = try store.chordsets().map(\.id)
        try await store.execute(.deleteChordset(id: ids[3]))
        try await store.execute(.moveChordset(id: ids[7], toIndex: 0))
        let before = try store.liveSnapshot()
        try await store.rebuild()
        #expect(try store.liveSnapshot() == before)
        #expect(try store.verify().isSound)
    }
}
