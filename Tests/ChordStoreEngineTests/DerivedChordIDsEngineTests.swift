import ChordStoreDomain
@testable import ChordStoreEngine
import Foundation
import Testing

/// Chords of chordsets the store names have ids derived from their chordset's, which no
/// chord index holds (views layout 9, the live state): every engine still finds them,
/// edits them, refuses their ids to others and verifies, before and after a restart,
/// a delete and its undo, and a rebuild.
@Suite("Derived chord ids in the engines")
struct DerivedChordIDsEngineTests {
    @Test("store-named, client-named and lookalike chord ids are found, edited, kept unique and verified", arguments: EngineKind.allCases)
    func engines(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let named = try await store.add("named by the store")
        #expect(named.chords.map(\.id) == (0..<8).map { DerivedChordIDs.chordID(of: named.id, position: $0) })
        let mine = try await addChordset(store, AddChordset(id: DerivedChordIDs.aligned(UUID()), title: "named by a client"))
        #expect(mine.chords.allSatisfy { DerivedChordIDs.owner(of: $0.id) != mine.id })
        let lookalike = DerivedChordIDs.chordID(of: DerivedChordIDs.aligned(UUID()), position: 4)
        let third = try await addChordset(store, AddChordset(
            title: "a lookalike", chords: (0..<8).map { ChordSpec(id: $0 == 2 ? lookalike : nil, position: $0) }))

        for chordset in [named, mine, third] {
            for chord in chordset.chords {
                _ = try await store.execute(.setChordBPM(chordID: chord.id, bpm: 90 + Double(chord.position)))
            }
        }
        #expect(try store.chordset(third.id)?.chords[2].bpm == 92)
        #expect(try store.chordset(named.id)?.chords.map(\.bpm) == (0..<8).map { 90 + Double($0) })
        // Nobody else takes a derived id, as a chord or as the controls chord.
        await expectRefused(store, .addChordset(AddChordset(title: "taken", chords: (0..<8).map { ChordSpec(id: $0 == 0 ? named.chords[5].id : nil, position: $0) }))) { $0.reason == .idInUse }
        await expectRefused(store, .setControlsChord(SetControlsChord(id: named.chords[1].id, bpm: 100, color: ChordColor(hue: 0, purity: 0, brightness: 0, alpha: 1)))) { $0.reason == .idInUse }
        // A chord id that looks derived but names no chordset is unknown.
        await expectRefused(store, .setChordBPM(chordID: DerivedChordIDs.chordID(of: DerivedChordIDs.aligned(UUID()), position: 0), bpm: 100)) { $0.code == .notFound }
        #expect(try store.verify().isSound)

        // A delete frees the ids (an edit of them is NOT_FOUND); its undo brings them back.
        _ = try await store.execute(.deleteChordset(id: named.id), context: CommandContext(session: "s"))
        await expectRefused(store, .setChordBPM(chordID: named.chords[0].id, bpm: 100)) { $0.code == .notFound }
        _ = try await store.execute(.undo, context: CommandContext(session: "s"))
        _ = try await store.execute(.setChordBPM(chordID: named.chords[0].id, bpm: 101))
        #expect(try store.profile().chords == 24)
        #expect(try store.verify().isSound)

        // The controls chord may take an id that only looks derived (the chordset it names
        // does not hold it); a delete-all and its undo keep every chord findable.
        let controlsID = DerivedChordIDs.chordID(of: mine.id, position: 0)
        _ = try await store.execute(.setControlsChord(SetControlsChord(id: controlsID, bpm: 100, color: ChordColor(hue: 0, purity: 0, brightness: 0))))
        _ = try await store.execute(.setChordBPM(chordID: controlsID, bpm: 101))
        _ = try await store.execute(.deleteAll, context: CommandContext(session: "s"))
        await expectRefused(store, .setChordBPM(chordID: third.chords[2].id, bpm: 100)) { $0.code == .notFound }
        _ = try await store.execute(.undo, context: CommandContext(session: "s"))
        for chordset in [named, mine, third] {
            for chord in chordset.chords { _ = try await store.execute(.setChordBPM(chordID: chord.id, bpm: 130)) }
        }
        await expectRefused(store, .addChordset(AddChordset(title: "taken", chords: (0..<8).map { ChordSpec(id: $0 == 0 ? controlsID : nil, position: $0) }))) { $0.reason == .idInUse }
        #expect(try store.controlsChord()?.bpm == 101)
        #expect(try store.verify().isSound)
    }

    @Test("the views of a closed store find the chords after a reopen and after a rebuild, and verify", arguments: [false, true])
    func reopenAndRebuild(live: Bool) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var options = ChordStore.Options()
        options.liveState = live
        let named: Chordset
        do {
            let store = try ChordStore.open(at: directory, options: options)
            named = try await store.add("named")
            store.close()
        }
        let store = try ChordStore.open(at: directory, options: options)
        defer { store.close() }
        _ = try await store.execute(.setChordBPM(chordID: named.chords[7].id, bpm: 77))
        try await store.rebuild()
        _ = try await store.execute(.setChordBPM(chordID: named.chords[6].id, bpm: 66))
        #expect(try store.chordset(named.id)?.chords.map(\.bpm).suffix(2) == [66, 77])
        #expect(try store.verify().isSound)
    }

    @Test("whether a chord already has one of a new chordset's derived ids: the one question answers as a lookup of each id would, at the range's edges too", arguments: EngineKind.allCases)
    func derivedIDsTaken(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let (edges, client, controls, fresh) = (DerivedChordIDs.aligned(UUID()), DerivedChordIDs.aligned(UUID()), DerivedChordIDs.aligned(UUID()), DerivedChordIDs.aligned(UUID()))
        func withLast(_ id: UUID, _ nibble: UInt8) -> UUID {
            var bytes = id.uuid
            bytes.15 |= nibble
            return UUID(uuid: bytes)
        }
        // Keys just outside `edges`'s eight (its own id, and a last nibble of 9), one of
        // `client`'s eight taken by a chord, the last of `controls`'s by the controls chord.
        let taken: [Int: UUID] = [0: edges, 1: withLast(edges, 9), 2: DerivedChordIDs.chordID(of: client, position: 3)]
        _ = try await addChordset(store, AddChordset(title: "a client's ids", chords: (0..<8).map { ChordSpec(id: taken[$0], position: $0) }))
        let color = ChordColor(hue: 0.5, purity: 0.5, brightness: 0.5, alpha: 1)
        _ = try await store.execute(.setControlsChord(SetControlsChord(id: DerivedChordIDs.chordID(of: controls, position: 7), bpm: 100, color: color)))
        let named = try await store.add("named by the store")
        try store.backend.withStores { stores in
            let snapshot = try stores.snapshot(of: try #require(try stores.store(named: StoreName.default)))
            for (chordset, expected) in [(edges, false), (client, true), (controls, true), (fresh, false), (DerivedChordIDs.aligned(named.id), false)] where chordset != named.id {
                let oneByOne = try (0..<8).contains { try snapshot.chordLocation(DerivedChordIDs.chordID(of: chordset, position: $0)) != nil }
                let asked = try snapshot.holdsChordID(derivedFrom: chordset)
                #expect(asked == expected && oneByOne == expected, "\(chordset)")
            }
        }
    }

    private func addChordset(_ store: ChordStore, _ add: AddChordset) async throws -> Chordset {
        guard case .chordsetAdded(let chordset) = try await store.execute(.addChordset(add)).event else {
            throw ChordStoreError(.internal, "not an add")
        }
        return chordset
    }

    /// Records an issue unless `command` is refused with an error that `expected` accepts.
    private func expectRefused(_ store: ChordStore, _ command: Command, _ expected: (ChordStoreError) -> Bool) async {
        do {
            _ = try await store.execute(command)
            Issue.record("\(command.kindName) was not refused")
        } catch {
            #expect(expected(error), "\(error)")
        }
    }
}
