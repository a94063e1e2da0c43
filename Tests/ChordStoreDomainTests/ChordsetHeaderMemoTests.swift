import ChordStoreDomain
import Foundation
import Testing

/// The memo a state keeps of what queries derive from its chordsets' headers: renewed at
/// each change of a header, kept through every other change.
@Suite("Chordset header memo")
struct ChordsetHeaderMemoTests {
    private func chordset(_ n: Int, index: Int) -> Chordset { SampleChordsets.numbered(n, index: index) }

    /// A state of three chordsets whose memo holds a value (so that it cannot be kept).
    private func filled() throws -> (InMemoryState, [Chordset]) {
        let sets = (0..<3).map { chordset($0, index: $0) }
        let state = try InMemoryState(replaying: sets.map(Event.chordsetAdded))
        _ = state.headerMemo.value(for: .title) { 1 }
        return (state, sets)
    }

    @Test("each change of a header gives the state a new, empty memo")
    func headerChangesRenewIt() throws {
        let (base, sets) = try filled()
        let changes: [(String, Event)] = [
            ("an add", .chordsetAdded(chordset(7, index: 1))),
            ("a rename", .chordsetRenamed(id: sets[1].id, title: "renamed", previousTitle: "c1")),
            ("a delete", .chordsetDeleted(sets[2])),
            ("a delete-all", .allDeleted(count: 3)),
        ]
        for (name, event) in changes {
            var state = base
            try Fold.apply(event, sequence: 4, to: &state)
            #expect(state.headerMemo !== base.headerMemo, "\(name)")
            #expect(state.headerMemo.isEmpty, "\(name)")
            #expect(base.headerMemo.holdsValue(for: .title), "\(name): the copy before the change keeps its memo")
        }
        // The undo of a delete-all puts the chordsets back: a new memo again.
        var state = base
        try Fold.apply(.allDeleted(count: 3), sequence: 4, to: &state)
        _ = state.headerMemo.value(for: .creationDate) { 2 }
        let emptied = state.headerMemo
        try Fold.apply(.allRestored(deletedAt: 4, count: 3), sequence: 5, to: &state)
        #expect(state.headerMemo !== emptied && state.chordsetCount() == 3)
    }

    @Test("a move, a chord's tempo or colour, the controls chord and an unchanged title keep the memo")
    func otherChangesKeepIt() throws {
        var (state, sets) = try filled()
        let memo = state.headerMemo
        let chord = sets[1].chords[3]
        try Fold.apply(.chordBPMSet(chordID: chord.id, chordsetID: sets[1].id, bpm: 90, previous: 120), sequence: 4, to: &state)
        try Fold.apply(.chordColorSet(chordID: chord.id, chordsetID: sets[1].id, color: ChordColor(hue: 1, purity: 0, brightness: 0), previous: chord.color), sequence: 5, to: &state)
        let controls = Chord(id: UUID(), position: 0, bpm: 60, color: ChordColor(hue: 0, purity: 0, brightness: 0))
        try Fold.apply(.controlsChordSet(controls, previous: nil), sequence: 6, to: &state)
        try Fold.apply(.chordsetMoved(id: sets[0].id, from: 0, to: 2), sequence: 7, to: &state)
        var same = try #require(state.chordset(sets[0].id))
        same.chords[0].bpm = 70
        state.replaceChordset(same)
        #expect(state.headerMemo === memo)
        #expect(state.chordset(sets[1].id)?.chords[3].bpm == 90)
        same.title = "another title"
        state.replaceChordset(same)
        #expect(state.headerMemo !== memo)
    }

    @Test("an empty memo the state alone holds is kept through adds; one a copy shares is not")
    func emptyUnsharedMemoIsKept() throws {
        var state = InMemoryState()
        weak let memo = state.headerMemo  // weak: a strong reference here would share it
        try Fold.apply(.chordsetAdded(chordset(1, index: 0)), sequence: 1, to: &state)
        #expect(memo != nil && state.headerMemo === memo)
        let copy = state
        try Fold.apply(.chordsetAdded(chordset(2, index: 1)), sequence: 2, to: &state)
        #expect(state.headerMemo !== copy.headerMemo, "a reader's copy could fill the shared memo from the old headers")
        #expect(copy.chordsetCount() == 1 && state.chordsetCount() == 2)

        // A memo the state alone holds, filled: renewed (and the old one freed).
        _ = state.headerMemo.value(for: .creationDate) { 1 }
        weak let filled = state.headerMemo
        try Fold.apply(.chordsetAdded(chordset(3, index: 2)), sequence: 3, to: &state)
        #expect(filled == nil)
        #expect(state.headerMemo.isEmpty)
    }

    @Test("the user order has no slot: its value is built at each call and never kept")
    func userOrderNotKept() {
        let memo = InMemoryState().headerMemo
        #expect(memo.value(for: .index) { 1 } == 1)
        #expect(memo.value(for: .index) { 2 } == 2)
        #expect(!memo.holdsValue(for: .index) && memo.isEmpty)
    }

    @Test("the memo is not part of the state's value")
    func notInEquality() throws {
        let (state, sets) = try filled()
        let other = try InMemoryState(replaying: sets.map(Event.chordsetAdded))
        #expect(state == other)
        #expect(state.hashValue == other.hashValue)
        #expect(state.headerMemo.value(for: .title) { 0 } == 1, "the value kept is returned, not built again")
    }
}
