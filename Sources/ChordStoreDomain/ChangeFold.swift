public import Foundation

/// How a change updates the undo and redo stacks, the revisions and the histories; the
/// counterpart of ``Fold`` for what the envelope says.
public enum ChangeFold {
    /// Applies `change`. `chordsets` are the chordsets the event touched (as ``Fold``
    /// returns them), whose histories it joins.
    public static func apply(_ change: Change, chordsets: [UUID], to changes: inout some ChangeWriting) throws {
        try apply(change, touched: .listed(chordsets), to: &changes)
    }

    /// ``apply(_:chordsets:to:)`` with the chordsets as ``Fold/applyReporting(_:sequence:to:)``
    /// reports them.
    public static func apply(_ change: Change, touched: TouchedChordsets, to changes: inout some ChangeWriting) throws {
        let session = change.session
        try changes.noteSessionChange(session, change.sequence, mark: change.mark)
        try change.event.forEachRevisionKey { key in try changes.advanceRevision(key, to: change.sequence, by: session) }
        switch touched {
        case .own:
            if let id = change.event.chordsetID { try noteHistory(of: id, change, in: &changes) }
        case .listed(let chordsets) where chordsets.count == 1:
            try noteHistory(of: chordsets[0], change, in: &changes)
        case .listed(let chordsets):
            for id in chordsets { try changes.noteHistory(chordset: id, change.sequence) }
        }
    }

    /// Notes `change` in the history of the one chordset it touched: as the chordset's
    /// addition when it added it (``ChangeWriting/noteHistory(addedChordset:_:)``).
    private static func noteHistory(of id: UUID, _ change: Change, in changes: inout some ChangeWriting) throws {
        if case .chordsetAdded = change.event {
            try changes.noteHistory(addedChordset: id, change.sequence)
        } else {
            try changes.noteHistory(chordset: id, change.sequence)
        }
    }
}
