import ChordStoreDomain
import Foundation
import Testing

@Suite("Fold and in-memory state")
struct FoldTests {
    private func chordset(_ n: Int, index: Int) -> Chordset { SampleChordsets.numbered(n, index: index) }

    @Test("delete cascades: the chordset's eight chords go, later chordsets shift down")
    func deleteCascades() throws {
        let a = chordset(1, index: 0), b = chordset(2, index: 1), c = chordset(3, index: 2)
        var state = try InMemoryState(replaying: [.chordsetAdded(a), .chordsetAdded(b), .chordsetAdded(c)])
        #expect(state.chordCount() == 24)
        try Fold.apply(.chordsetDeleted(b), sequence: 1, to: &state)
        #expect(state.chordCount() == 16)
        #expect(b.chords.allSatisfy { state.chordLocation($0.id) == nil })
        #expect(state.chordset(c.id)?.index == 1)
        try Invariants.check(state)
    }

    @Test("the fold reports the chordsets a delete-all removed and a restore-all brought back by id, and any other event's as its own")
    func reportsTouchedChordsets() throws {
        let sets = (0..<3).map { chordset($0, index: $0) }
        var state = InMemoryState()
        for (offset, set) in sets.enumerated() {
            #expect(try Fold.applyReporting(.chordsetAdded(set), sequence: UInt64(offset + 1), to: &state) == .own)
        }
        let renamed = Event.chordsetRenamed(id: sets[1].id, title: "r", previousTitle: sets[1].title)
        #expect(try Fold.applyReporting(renamed, sequence: 4, to: &state) == .own)
        #expect(TouchedChordsets.own.chordsets(of: renamed) == [sets[1].id])
        #expect(TouchedChordsets.own.chordsets(of: .controlsChordSet(nil, previous: nil)) == [])
        #expect(try Fold.applyReporting(.allDeleted(count: 3), sequence: 5, to: &state) == .listed(sets.map(\.id)))
        #expect(state.chordsetCount() == 0)
        #expect(try Fold.applyReporting(.allRestored(deletedAt: 5, count: 3), sequence: 6, to: &state) == .listed(sets.map(\.id)))
        #expect(try Fold.apply(.allDeleted(count: 3), sequence: 7, to: &state) == sets.map(\.id))
    }

    @Test("moves shift the chordsets between the two indexes by one, both ways")
    func moves() throws {
        let sets = (0..<5).map { chordset($0, index: $0) }
        var state = try InMemoryState(replaying: sets.map(Event.chordsetAdded))
        try Fold.apply(.chordsetMoved(id: sets[0].id, from: 0, to: 3), sequence: 1, to: &state)
        #expect(state.chordsetIDsInOrder == [sets[1], sets[2], sets[3], sets[0], sets[4]].map(\.id))
        try Fold.apply(.chordsetMoved(id: sets[4].id, from: 4, to: 1), sequence: 1, to: &state)
        #expect(state.chordsetIDsInOrder == [sets[1], sets[4], sets[2], sets[3], sets[0]].map(\.id))
        try Invariants.check(state)
    }

    @Test("inserting at an index (undoing a delete) puts the chordset back in its place")
    func insertAtIndex() throws {
        let sets = (0..<3).map { chordset($0, index: $0) }
        var state = try InMemoryState(replaying: sets.map(Event.chordsetAdded))
        try Fold.apply(.chordsetDeleted(sets[1]), sequence: 1, to: &state)
        try Fold.apply(.chordsetAdded(sets[1]), sequence: 1, to: &state)
        #expect(state.chordsetIDsInOrder == sets.map(\.id))
        try Invariants.check(state)
    }

    @Test("delete-all removes every chordset and chord but keeps the controls chord")
    func deleteAllKeepsControls() throws {
        let controls = Chord(id: UUID(), position: 0, bpm: 60, color: ChordColor(hue: 0, purity: 0, brightness: 0))
        var state = try InMemoryState(replaying: [.chordsetAdded(chordset(1, index: 0)), .controlsChordSet(controls, previous: nil)])
        try Fold.apply(.allDeleted(count: 1), sequence: 1, to: &state)
        #expect(state.chordsetCount() == 0)
        #expect(state.chordCount() == 1)
        #expect(state.chordLocation(controls.id) == .controls)
    }

    @Test("an event naming a missing chordset is reported as damage, not applied")
    func missingChordsetIsDataLoss() {
        var state = InMemoryState()
        #expect(throws: ChordStoreError.self) {
            try Fold.apply(.chordsetRenamed(id: UUID(), title: "x", previousTitle: ""), sequence: 1, to: &state)
        }
    }

    @Test("Instant survives the protobuf Timestamp split exactly, before and after 1970")
    func instantRoundTrip() {
        for micros: Int64 in [0, 1, -1, 999_999, -999_999, 1_700_000_000_123_456, -62_135_596_800_000_000] {
            let instant = Instant(microsecondsSince1970: micros)
            let (seconds, nanos) = instant.secondsAndNanos
            #expect(nanos >= 0 && nanos < 1_000_000_000)
            #expect(Instant(seconds: seconds, nanos: nanos) == instant)
        }
    }
}
