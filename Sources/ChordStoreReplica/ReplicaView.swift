import ChordStoreDomain
import Foundation

/// The store as far as some events go: the chordsets, the undo stacks and revisions,
/// and the device session's own changes (which its undo and redo read back).
struct ReplicaView: Sendable, Hashable, ChangeLogReading {
    var state = InMemoryState()
    var changes = InMemoryChanges()
    /// The device session's changes by sequence number: undo and redo read the change
    /// they revert, which is always one of the session's own.
    var ownChanges: [UInt64: Change] = [:]
    /// The command ids of the device session's changes, by sequence number (where known):
    /// what a queued undo or redo names as the change it reverts.
    var ownCommandIDs: [UInt64: String] = [:]
    /// The last event folded.
    var head: UInt64 = 0

    /// Folds `change`, the event after ``head``, made under `commandID` (empty: unknown).
    mutating func fold(_ change: Change, session: String, commandID: String = "") throws(ChordStoreError) {
        do {
            let touched = try Fold.apply(change.event, sequence: change.sequence, to: &state)
            changes.apply(change, chordsets: touched)
        } catch {
            throw ChordStoreError(.dataLoss, "event \(change.sequence) (\(change.event.kindName)) does not apply: \(error)")
        }
        if change.session == session {
            ownChanges[change.sequence] = change
            if !commandID.isEmpty { ownCommandIDs[change.sequence] = commandID }
        }
        head = change.sequence
    }

    func change(at sequence: UInt64) -> Change? { ownChanges[sequence] }

    /// The command id of the device's change an undo or redo marked `mark` reverts.
    func commandID(revertedBy mark: ChangeMark?) -> String? {
        switch mark {
        case .undoes(let sequence), .redoes(let sequence): ownCommandIDs[sequence]
        case nil: nil
        }
    }
}
