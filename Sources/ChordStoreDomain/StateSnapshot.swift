import Foundation

/// A canonical, comparable picture of any state: every chordset in user order and the
/// controls chord. Two states are equal exactly when their snapshots are.
public struct StateSnapshot: Sendable, Hashable {
    /// Chordsets in the user order, each with its chords in position order.
    public var chordsets: [Chordset]
    /// The controls chord, if set.
    public var controlsChord: Chord?

    /// Reads the snapshot of `state`.
    public init(of state: some StateReading) throws {
        let count = try state.chordsetCount()
        var chordsets: [Chordset] = []
        chordsets.reserveCapacity(count)
        for index in 0..<count {
            guard let id = try state.chordsetID(atIndex: index), let chordset = try state.chordset(id) else {
                throw ChordStoreError(.dataLoss, "no chordset at index \(index) of \(count)")
            }
            chordsets.append(chordset)
        }
        self.chordsets = chordsets
        self.controlsChord = try state.controlsChord()
    }

    /// A sentence naming the first difference from `other`, or `nil` when equal.
    public func firstDifference(from other: StateSnapshot) -> String? {
        if controlsChord != other.controlsChord {
            return "controls chord differs: \(String(describing: controlsChord)) vs \(String(describing: other.controlsChord))"
        }
        for (index, (mine, theirs)) in zip(chordsets, other.chordsets).enumerated() where mine != theirs {
            return "chordset at index \(index) differs: \(mine.id) \"\(mine.title)\" vs \(theirs.id) \"\(theirs.title)\""
        }
        if chordsets.count != other.chordsets.count {
            return "chordset count differs: \(chordsets.count) vs \(other.chordsets.count)"
        }
        return nil
    }
}
