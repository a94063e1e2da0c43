import ChordStoreDomain
import ChordStoreEngine
import Foundation
import Testing
import TestSupport

/// Undo and redo through compensating events: what each undo restores, the conflict
/// rule, the redo stack, and expected revisions.
@Suite("Undo and redo")
struct UndoTests {
    static let alice = CommandContext(session: "alice")
    static let bob = CommandContext(session: "bob")

    /// Runs `command` as alice, then undo, then redo, checking that undo restores the
    /// state before the command exactly (same ids, indexes, chords) and redo the state
    /// after it; ends undone.
    func roundTrip(_ store: ChordStore, _ command: Command, _ comment: Comment) async throws {
        let before = try store.liveSnapshot()
        try await store.execute(command, context: Self.alice)
        let after = try store.liveSnapshot()
        #expect(after != before, comment)
        let undo = try await store.execute(.undo, context: Self.alice)
        #expect(try store.liveSnapshot() == before, "undo of \(comment): \(undo.event.kindName)")
        try await store.execute(.redo, context: Self.alice)
        #expect(try store.liveSnapshot() == after, "redo of \(comment)")
        try await store.execute(.undo, context: Self.alice)
        #expect(try store.liveSnapshot() == before, "second undo of \(comment)")
        try await store.execute(.redo, context: Self.alice)
        #expect(try store.liveSnapshot() == after, "second redo of \(comment)")
        try await store.execute(.undo, context: Self.alice)
        #expect(try store.liveSnapshot() == before, "third undo of \(comment)")
    }

    @Test("each kind of change is undone to exactly the prior state and redone to the state after", arguments: EngineKind.allCases)
    func everyKind(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        var sets: [Chordset] = []
        for i in 0..<5 { sets.append(try await store.add("set \(i)")) }
        let color = ChordColor(hue: 0.25, purity: 0.5, brightness: 0.75, alpha: 1)

        try await roundTrip(store, .addChordset(AddChordset(title: "new")), "add")
        try await roundTrip(store, .deleteChordset(id: sets[2].id), "delete")
        #expect(try store.chordset(sets[2].id) == sets[2], "the deleted chordset came back with its ids, index and chords")
        try await store.execute(.moveChordset(id: sets[4].id, toIndex: 0), context: Self.bob)
        try await roundTrip(store, .renameChordset(id: sets[1].id, title: "renamed"), "rename")
        try await roundTrip(store, .setChordColor(chordID: sets[3].chords[5].id, color: color), "colour")
        try await roundTrip(store, .setChordBPM(chordID: sets[4].chords[0].id, bpm: 77), "bpm")
        try await roundTrip(store, .moveChordset(id: sets[0].id, toIndex: 4), "move down")
        try await roundTrip(store, .moveChordset(id: sets[4].id, toIndex: 1), "move up")
        try await roundTrip(store, .setControlsChord(SetControlsChord(bpm: 90, color: color)), "create controls chord")
        try await store.execute(.setControlsChord(SetControlsChord(bpm: 90, color: color)), context: Self.bob)
        try await roundTrip(store, .setControlsChord(SetControlsChord(bpm: 100, color: color)), "replace controls chord")
        let controls = try #require(try store.controlsChord())
        try await roundTrip(store, .setChordBPM(chordID: controls.id, bpm: 42), "controls bpm")
        try await roundTrip(store, .deleteAll, "delete-all")
        #expect(try store.chordsets(order: .index).map(\.id) == [sets[4].id] + sets[0..<4].map(\.id))
        #expect(try store.verify().isSound)
    }

    @Test("undo of a change another session changed since fails with FAILED_PRECONDITION naming its event; nothing is written", arguments: EngineKind.allCases)
    func conflicts(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let set = try await store.add("x")
        let other = try await store.add("y")
        try await store.execute(.renameChordset(id: set.id, title: "alice's"), context: Self.alice)
        let bobs = try await store.execute(.renameChordset(id: set.id, title: "bob's"), context: Self.bob)
        let head = try store.profile().lastSequence
        let refusal = await #expect(throws: ChordStoreError.self) { try await store.execute(.undo, context: Self.alice) }
        #expect(refusal?.code == .failedPrecondition)
        #expect(refusal?.message.contains("event \(bobs.sequence)") == true, "\(String(describing: refusal))")
        #expect(try store.profile().lastSequence == head)
        #expect(try store.chordset(set.id)?.title == "bob's")

        // A change by another session to another chordset is no conflict.
        try await store.execute(.renameChordset(id: other.id, title: "alice 2"), context: Self.alice)
        try await store.execute(.renameChordset(id: set.id, title: "bob 2"), context: Self.bob)
        try await store.execute(.undo, context: Self.alice)
        #expect(try store.chordset(other.id)?.title == "y")

        // Redo follows the same rule: bob changes the chordset after alice's undo.
        try await store.execute(.renameChordset(id: other.id, title: "alice 3"), context: Self.alice)
        try await store.execute(.undo, context: Self.alice)
        try await store.execute(.renameChordset(id: other.id, title: "bob 3"), context: Self.bob)
        let redoRefusal = await #expect(throws: ChordStoreError.self) { try await store.execute(.redo, context: Self.alice) }
        #expect(redoRefusal?.code == .failedPrecondition)

        // A delete-all by another session conflicts with undoing a change to any chordset.
        try await store.execute(.renameChordset(id: other.id, title: "alice 4"), context: Self.alice)
        try await store.execute(.deleteAll, context: Self.bob)
        await #expect(throws: ChordStoreError.self) { try await store.execute(.undo, context: Self.alice) }
        // ... and any change by another session conflicts with undoing a delete-all.
        try await store.execute(.undo, context: Self.bob)
        #expect(try store.profile().chordsets == 2)
        try await store.execute(.redo, context: Self.bob)
        try await store.execute(.addChordset(AddChordset(title: "alice's new")), context: Self.alice)
        await #expect(throws: ChordStoreError.self) { try await store.execute(.undo, context: Self.bob) }
        #expect(try store.verify().isSound)
    }

    @Test("a new change clears the session's redo stack; other sessions' stacks are their own", arguments: EngineKind.allCases)
    func redoStack(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let set = try await store.add("x")
        let other = try await store.add("z")
        try await store.execute(.renameChordset(id: set.id, title: "a1"), context: Self.alice)
        try await store.execute(.renameChordset(id: other.id, title: "b1"), context: Self.bob)
        try await store.execute(.undo, context: Self.alice)
        #expect(try store.session("alice").redoDepth == 1)
        try await store.execute(.renameChordset(id: set.id, title: "a2"), context: Self.alice)
        #expect(try store.session("alice").redoDepth == 0)
        let refusal = await #expect(throws: ChordStoreError.self) { try await store.execute(.redo, context: Self.alice) }
        #expect(refusal?.code == .failedPrecondition)
        #expect(refusal?.message.contains("nothing to redo") == true)
        // Bob's stack is untouched by alice's changes.
        try await store.execute(.undo, context: Self.bob)
        #expect(try store.chordset(other.id)?.title == "z")
        // Undo walks back through alice's changes one by one, then runs out.
        try await store.execute(.undo, context: Self.alice)
        #expect(try store.chordset(set.id)?.title == "x")
        let empty = await #expect(throws: ChordStoreError.self) { try await store.execute(.undo, context: Self.alice) }
        #expect(empty?.message.contains("nothing to undo") == true)
    }

    @Test("the undo depth limit stops a session going further back", arguments: EngineKind.allCases)
    func depthLimit(kind: EngineKind) async throws {
        let store = try kind.makeStore { $0.limits.maxUndoDepth = 2 }
        defer { store.close() }
        let set = try await store.add("x")
        for i in 0..<4 { try await store.execute(.renameChordset(id: set.id, title: "t\(i)"), context: Self.alice) }
        try await store.execute(.undo, context: Self.alice)
        try await store.execute(.undo, context: Self.alice)
        let refusal = await #expect(throws: ChordStoreError.self) { try await store.execute(.undo, context: Self.alice) }
        #expect(refusal?.code == .failedPrecondition)
        #expect(try store.chordset(set.id)?.title == "t1")
        try await store.execute(.redo, context: Self.alice)
        try await store.execute(.undo, context: Self.alice)
    }

    @Test("an expected revision that moved on fails with ABORTED and reports the current one", arguments: EngineKind.allCases)
    func expectedRevision(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let added = try await store.execute(.addChordset(AddChordset(title: "x")))
        guard case .chordsetAdded(let set) = added.event else { return }
        #expect(try store.revision(.chordset(set.id)) == added.sequence)
        let renamed = try await store.execute(
            .renameChordset(id: set.id, title: "y"), context: CommandContext(expectedRevision: added.sequence))
        let stale = await #expect(throws: ChordStoreError.self) {
            try await store.execute(.renameChordset(id: set.id, title: "z"), context: CommandContext(expectedRevision: added.sequence))
        }
        #expect(stale?.code == .aborted)
        #expect(stale?.currentRevision == renamed.sequence)
        #expect(try store.chordset(set.id)?.title == "y")
        // A chord edit checks its chordset's revision; the controls chord and the
        // collection have their own.
        try await store.execute(
            .setChordBPM(chordID: set.chords[0].id, bpm: 60), context: CommandContext(expectedRevision: renamed.sequence))
        let controls = try await store.execute(
            .setControlsChord(SetControlsChord(bpm: 1, color: ChordColor(hue: 0.5, purity: 0.5, brightness: 0.5))),
            context: CommandContext(expectedRevision: 0))
        #expect(try store.revision(.controls) == controls.sequence)
        await #expect(throws: ChordStoreError.self) {
            try await store.execute(.deleteAll, context: CommandContext(expectedRevision: 1))
        }
    }

    @Test("undo and redo stacks survive a restart and a rebuild")
    func restart() async throws {
        let directory = temporaryDirectory()
        var store = try ChordStore.open(at: directory)
        let set = try await store.add("x")
        try await store.execute(.renameChordset(id: set.id, title: "1"), context: Self.alice)
        try await store.execute(.renameChordset(id: set.id, title: "2"), context: Self.alice)
        try await store.execute(.deleteAll, context: Self.alice)
        try await store.execute(.undo, context: Self.alice)
        try await store.execute(.undo, context: Self.alice)
        let session = try store.session("alice")
        store.close()

        store = try ChordStore.open(at: directory)
        #expect(try store.session("alice") == session)
        try await store.rebuild()
        #expect(try store.session("alice") == session)
        #expect(try store.verify().isSound)
        try await store.execute(.redo, context: Self.alice)
        #expect(try store.chordset(set.id)?.title == "2")
        try await store.execute(.redo, context: Self.alice)
        #expect(try store.profile().chordsets == 0)
        try await store.execute(.undo, context: Self.alice)
        #expect(try store.chordset(set.id)?.title == "2")
        store.close()
    }

    @Test("a repeated command id of an undo returns the original undo and writes nothing", arguments: EngineKind.allCases)
    func idempotentUndo(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let set = try await store.add("x")
        try await store.execute(.renameChordset(id: set.id, title: "1"), context: Self.alice)
        try await store.execute(.renameChordset(id: set.id, title: "2"), context: Self.alice)
        let context = CommandContext(session: "alice", commandID: "undo-1")
        let first = try await store.execute(.undo, context: context)
        let again = try await store.execute(.undo, context: context)
        #expect(again == first)
        #expect(try store.chordset(set.id)?.title == "1")
        await #expect(throws: ChordStoreError.self) { try await store.execute(.redo, context: context) }
    }

    @Test("histories list a chordset's and a session's events in order", arguments: EngineKind.allCases)
    func histories(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let added = try await store.execute(.addChordset(AddChordset(title: "x")), context: Self.alice)
        guard case .chordsetAdded(let set) = added.event else { return }
        let other = try await store.add("other")
        let rename = try await store.execute(.renameChordset(id: set.id, title: "y"), context: Self.bob)
        let bpm = try await store.execute(.setChordBPM(chordID: set.chords[1].id, bpm: 50), context: Self.alice)
        let all = try await store.execute(.deleteAll, context: Self.bob)
        let undo = try await store.execute(.undo, context: Self.bob)
        #expect(try store.history(chordset: set.id).map(\.sequence) == [added, rename, bpm, all, undo].map(\.sequence))
        #expect(try store.history(chordset: other.id).count == 3)
        #expect(try store.history(session: "alice").map(\.sequence) == [added.sequence, bpm.sequence])
        #expect(try store.history(session: "bob", after: rename.sequence, limit: 1).map(\.sequence) == [all.sequence])
        #expect(try store.history(session: "nobody").isEmpty)
    }
}

/// Thousands of random interleavings of commands, undos and redos from three sessions.
@Suite("Undo property")
struct UndoPropertyTests {
    @Test("live state equals a replay after every step; undo then redo is the identity", arguments: EngineKind.allCases, [21, 22] as [UInt64])
    func property(kind: EngineKind, seed: UInt64) async throws {
        try await onOwnThread {
            let store = try kind.makeStore(seed: seed)
            defer { store.close() }
            var g = SplitMix64(seed: seed)
            let sessions = ["s1", "s2", "s3"]
            var undone = 0, redone = 0, conflicts = 0, identities = 0
            let steps = 1_000
            for step in 0..<steps {
                let live = try store.liveSnapshot()
                let session = sessions[Int(g.next() % 3)]
                let context = CommandContext(session: session, commandID: "c\(step)")
                let command: Command = switch g.next() % 10 {
                case 0, 1, 2: .undo
                case 3, 4: .redo
                default: ReplayPropertyTests.randomCommand(&g, chordsets: live.chordsets, controls: live.controlsChord)
                }
                do throws(ChordStoreError) {
                    try await store.execute(command, context: context)
                    if command == .undo { undone += 1 }
                    if command == .redo { redone += 1 }
                } catch {
                    #expect(error.code != .internal && error.code != .dataLoss, "step \(step) \(command.kindName): \(error)")
                    if error.message.contains("another session") { conflicts += 1 }
                    let unchanged = try store.liveSnapshot()
                    #expect(unchanged == live, "step \(step): a refused \(command.kindName) changed the state")
                }
                // Sometimes: undo then redo by the same session, with nothing in between,
                // must come back to the same state.
                if g.next() % 10 == 0 {
                    let before = try store.liveSnapshot()
                    let undoContext = CommandContext(session: session, commandID: "u\(step)")
                    if (try? await store.execute(.undo, context: undoContext)) != nil {
                        try await store.execute(.redo, context: CommandContext(session: session, commandID: "r\(step)"))
                        let after = try store.liveSnapshot()
                        #expect(after == before, "step \(step): undo then redo by \(session) is not the identity: \(after.firstDifference(from: before) ?? "")")
                        identities += 1
                    }
                }
                let replayed = try store.replayedSnapshot()
                let difference = replayed.firstDifference(from: try store.liveSnapshot())
                #expect(difference == nil, "step \(step) \(command.kindName): replay vs live: \(difference ?? "")")
                if difference != nil { return }
                if step % 100 == 99 {
                    let report = try store.verify()
                    #expect(report.isSound, "step \(step): \(String(describing: report.problem))")
                    if !report.isSound { return }
                }
            }
            #expect(undone > steps / 10 && redone > steps / 50, "undos \(undone), redos \(redone)")
            #expect(conflicts > 0, "the interleavings should produce conflicts")
            #expect(identities > 20)
        }
    }
}
