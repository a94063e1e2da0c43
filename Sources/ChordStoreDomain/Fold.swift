public import Foundation

/// The fold: how an event changes the state. Replaying the log is applying every event
/// in order to an empty state; the live views are the same fold applied as events commit.
public enum Fold {
    /// Applies `event`, recorded at `sequence`, to `state`; returns the chordsets it
    /// touched (their histories include it). The event must have been decided against
    /// this state (or be the next event of a valid log); the fold itself checks nothing.
    @discardableResult
    public static func apply(_ event: Event, sequence: UInt64, to state: inout some StateWriting) throws -> [UUID] {
        try applyReporting(event, sequence: sequence, to: &state).chordsets(of: event)
    }

    /// ``apply(_:sequence:to:)``, reporting the chordsets touched without making an array
    /// for an event of one chordset (a replay folds a million events: an array each was a
    /// `malloc` on the folding thread and a `free` on the one that folds their changes).
    public static func applyReporting(_ event: Event, sequence: UInt64, to state: inout some StateWriting) throws -> TouchedChordsets {
        switch event {
        case .allDeleted:
            return .listed(try state.removeAllChordsets(deletedAt: sequence))
        case .allRestored(let deletedAt, _):
            return .listed(try state.restoreChordsets(deletedAt: deletedAt))
        default:
            try apply(event, to: &state)
            return .own
        }
    }

    private static func apply(_ event: Event, to state: inout some StateWriting) throws {
        switch event {
        case .chordsetAdded(let chordset):
            try state.insertChordset(chordset)

        case .chordsetRenamed(let id, let title, _):
            guard try state.retitleChordset(id, to: title) else { throw missing(id, event) }

        case .chordsetDeleted(let chordset):
            guard let stored = try state.chordset(chordset.id) else { throw missing(chordset.id, event) }
            try state.removeChordset(stored)

        case .chordColorSet(let chordID, let chordsetID, let color, _):
            try updateChord(chordID, in: chordsetID, state: &state, event: event) { $0.color = color }

        case .chordBPMSet(let chordID, let chordsetID, let bpm, _):
            try updateChord(chordID, in: chordsetID, state: &state, event: event) { $0.bpm = bpm }

        case .controlsChordSet(let chord, _):
            try state.setControlsChord(chord)

        case .chordsetMoved(let id, let from, let to):
            try state.moveChordset(id, from: from, to: to)

        case .allDeleted, .allRestored, .store, .token:
            break
        }
    }

    private static func updateChord(
        _ chordID: UUID, in chordsetID: UUID?, state: inout some StateWriting, event: Event,
        _ change: (inout Chord) -> Void
    ) throws {
        guard let chordsetID else {
            guard var chord = try state.controlsChord(), chord.id == chordID else { throw missing(chordID, event) }
            change(&chord)
            try state.setControlsChord(chord)
            return
        }
        guard try state.updateChord(chordID, inChordset: chordsetID, change) else { throw missing(chordID, event) }
    }

    private static func missing(_ id: UUID, _ event: Event) -> ChordStoreError {
        ChordStoreError(.dataLoss, "event \(event.kindName) names \(id), which the state does not hold")
    }
}
