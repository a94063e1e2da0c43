import Foundation

/// The structural rules every state obeys after every event.
public enum Invariants {
    /// Checks `state` and throws ``ChordStoreError/Code/dataLoss`` naming the first broken
    /// rule: indexes `0..<count` with no gap or repeat; exactly eight chords per chordset at
    /// positions 0–7, each findable by id; chords = 8 × chordsets + the controls chord.
    public static func check(_ state: some StateReading) throws {
        let count = try state.chordsetCount()
        var seen = Set<UUID>()
        seen.reserveCapacity(count)
        for index in 0..<count {
            guard let id = try state.chordsetID(atIndex: index) else {
                throw broken("no chordset at index \(index) of \(count)")
            }
            guard seen.insert(id).inserted else { throw broken("chordset \(id) appears twice in the order") }
            guard let chordset = try state.chordset(id) else { throw broken("chordset \(id) at index \(index) has no record") }
            guard chordset.index == index else {
                throw broken("chordset \(id) is at index \(index) but records index \(chordset.index)")
            }
            guard chordset.chords.map(\.position) == Array(0..<Chordset.chordCount) else {
                throw broken("chordset \(id) has chords at positions \(chordset.chords.map(\.position))")
            }
            for chord in chordset.chords where try state.chordLocation(chord.id) != .chordset(id, position: chord.position) {
                throw broken("chord \(chord.id) of chordset \(id) is not indexed at its position")
            }
        }
        let controls = try state.controlsChord()
        if let controls, try state.chordLocation(controls.id) != .controls {
            throw broken("the controls chord \(controls.id) is not indexed as the controls chord")
        }
        let expected = Chordset.chordCount * count + (controls == nil ? 0 : 1)
        let chords = try state.chordCount()
        guard chords == expected else {
            throw broken("\(chords) chords for \(count) chordsets; expected \(expected)")
        }
    }

    private static func broken(_ message: String) -> ChordStoreError {
        ChordStoreError(.dataLoss, "invariant broken: \(message)")
    }
}
