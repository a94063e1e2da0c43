import Foundation

/// A log with no events, for deciding commands that never read the log.
struct EmptyChangeLog: ChangeLogReading {
    func change(at sequence: UInt64) -> Change? { nil }
}

extension Decider {
    /// The revision `command`'s item is at: the sequence number of its last change, 0 if
    /// it never changed. The item is the chordset for chordset and chord commands (a
    /// delete-all or its undo counts as a change of every chordset it removed or put
    /// back), the controls chord for its commands, and the collection for delete-all.
    public func revision(for command: Command, state: some StateReading, changes: some ChangeReading) throws -> UInt64 {
        switch command {
        case .addChordset(let add):
            guard let id = add.id else { return 0 }
            return try chordsetRevision(id, state: state, changes: changes)
        case .renameChordset(let id, _), .deleteChordset(let id), .moveChordset(let id, _):
            return try chordsetRevision(id, state: state, changes: changes)
        case .setChordColor(let chordID, _), .setChordBPM(let chordID, _):
            switch try state.chordLocation(chordID) {
            case .chordset(let id, _): return try chordsetRevision(id, state: state, changes: changes)
            case .controls: return try changes.revision(.controls)?.last ?? 0
            case nil: throw ChordStoreError(.notFound, "no chord has id \(chordID)", reason: .chordNotFound)
            }
        case .setControlsChord:
            return try changes.revision(.controls)?.last ?? 0
        case .deleteAll:
            return try changes.revision(.collection)?.last ?? 0
        case .undo, .redo:
            throw ChordStoreError(
                .invalidArgument, "\(command.kindName) takes no expected revision: it checks for conflicts itself")
        }
    }

    /// What `command`'s revision is the revision of, for messages.
    func revisionSubject(_ command: Command) -> String {
        switch command {
        case .setControlsChord: "controls chord"
        case .deleteAll: "collection"
        case .setChordColor(let id, _), .setChordBPM(let id, _): "chordset of chord \(id)"
        case .addChordset(let add): add.id.map { "chordset \($0)" } ?? "new chordset"
        case .renameChordset(let id, _), .deleteChordset(let id), .moveChordset(let id, _): "chordset \(id)"
        case .undo, .redo: preconditionFailure("revision(for:) refuses \(command.kindName) first")
        }
    }

    private func chordsetRevision(_ id: UUID, state: some StateReading, changes: some ChangeReading) throws -> UInt64 {
        let own = try changes.revision(.chordset(id))?.last ?? 0
        guard try state.chordset(id) != nil else { return own }
        return max(own, try changes.revision(.bulk)?.last ?? 0)
    }

    /// Reverts `session`'s most recent change that is not undone.
    func undo(
        session: String, state: some StateReading, changes: some ChangeReading, log: some ChangeLogReading
    ) throws -> Decision {
        guard let target = try changes.undoTop(session) else {
            throw ChordStoreError(.failedPrecondition, "session \"\(session)\" has nothing to undo", reason: .nothingToUndo)
        }
        if let cap = validation.limits.maxUndoDepth, try changes.redoDepth(session, atMost: cap) >= cap {
            throw ChordStoreError(
                .failedPrecondition, "session \"\(session)\" has undone \(cap) changes in a row, the server's limit")
        }
        let change = try logged(target, log)
        try checkConflicts(change, session: session, changes: changes, verb: "undo")
        return Decision(event: try inverse(of: change, state: state), mark: .undoes(target))
    }

    /// Re-applies `session`'s most recently undone change, by reverting its undo event.
    func redo(
        session: String, state: some StateReading, changes: some ChangeReading, log: some ChangeLogReading
    ) throws -> Decision {
        guard let target = try changes.redoTop(session) else {
            throw ChordStoreError(.failedPrecondition, "session \"\(session)\" has nothing to redo", reason: .nothingToRedo)
        }
        let change = try logged(target, log)
        try checkConflicts(change, session: session, changes: changes, verb: "redo")
        return Decision(event: try inverse(of: change, state: state), mark: .redoes(target))
    }

    private func logged(_ sequence: UInt64, _ log: some ChangeLogReading) throws -> Change {
        guard let change = try log.change(at: sequence) else {
            throw ChordStoreError(.dataLoss, "the undo stacks name event \(sequence), which the log does not hold")
        }
        return change
    }

    /// The conflict rule: undo (or redo) of an event fails if a session other than
    /// `session` changed what the event changed after it.
    private func checkConflicts(_ change: Change, session: String, changes: some ChangeReading, verb: String) throws {
        for key in change.event.conflictKeys {
            guard let revision = try changes.revision(key) else { continue }
            let other = revision.lastChange(notBy: session)
            if other > change.sequence {
                throw ChordStoreError(
                    .failedPrecondition,
                    "cannot \(verb) event \(change.sequence): event \(other), by another session, changed \(describe(key)) after it")
            }
        }
    }

    private func describe(_ key: RevisionKey) -> String {
        switch key {
        case .chordset(let id): "chordset \(id)"
        case .controls: "the controls chord"
        case .collection: "the chordsets"
        case .bulk: "every chordset (a delete-all or its undo)"
        }
    }

    /// The event that reverts `change`'s effect on the current state. The conflict rule
    /// makes the current values those `change` left; a state that still does not allow
    /// the inverse (an id taken meanwhile) is refused, never half-applied.
    private func inverse(of change: Change, state: some StateReading) throws -> Event {
        switch change.event {
        case .chordsetAdded(let added):
            return .chordsetDeleted(try existingChordset(added.id, state: state))

        case .chordsetDeleted(let deleted):
            try checkRestorable([deleted], state: state, extra: 1)
            var restored = deleted
            restored.index = min(deleted.index, try state.chordsetCount())
            return .chordsetAdded(restored)

        case .chordsetRenamed(let id, _, let previousTitle):
            let current = try existingChordset(id, state: state)
            return .chordsetRenamed(id: id, title: previousTitle, previousTitle: current.title)

        case .chordColorSet(let chordID, _, _, let previous):
            let (chord, chordsetID) = try existingChord(chordID, state: state)
            return .chordColorSet(chordID: chordID, chordsetID: chordsetID, color: previous, previous: chord.color)

        case .chordBPMSet(let chordID, _, _, let previous):
            let (chord, chordsetID) = try existingChord(chordID, state: state)
            return .chordBPMSet(chordID: chordID, chordsetID: chordsetID, bpm: previous, previous: chord.bpm)

        case .controlsChordSet(_, let previous):
            let current = try state.controlsChord()
            if let previous, previous.id != current?.id, try state.chordLocation(previous.id) != nil || state.chordset(previous.id) != nil {
                throw ChordStoreError(.failedPrecondition, "chord id \(previous.id) is in use again; cannot put the controls chord back")
            }
            return .controlsChordSet(previous, previous: current)

        case .chordsetMoved(let id, let from, _):
            let current = try existingChordset(id, state: state)
            let count = try state.chordsetCount()
            return .chordsetMoved(id: id, from: current.index, to: min(from, count - 1))

        case .allDeleted:
            guard let deleted = try state.deletedChordsets(at: change.sequence) else {
                throw ChordStoreError(.dataLoss, "the chordsets removed by event \(change.sequence) are not kept")
            }
            try checkRestorable(deleted, state: state, extra: deleted.count)
            return .allRestored(deletedAt: change.sequence, count: deleted.count)

        case .allRestored:
            return .allDeleted(count: try state.chordsetCount())

        case .store, .token:
            throw ChordStoreError(.internal, "event \(change.sequence) changes the server's stores or tokens, which no session undoes")
        }
    }

    /// Refuses to put back chordsets whose ids (or chord ids) are in use again, or that
    /// would take the store past its size limit.
    func checkRestorable(_ chordsets: [Chordset], state: some StateReading, extra: Int) throws {
        let count = try state.chordsetCount()
        guard count + extra <= validation.limits.maxChordsets else {
            throw ChordStoreError(.resourceExhausted, "putting back \(extra) chordsets would pass the limit of \(validation.limits.maxChordsets)")
        }
        for chordset in chordsets {
            if try state.chordset(chordset.id) != nil || state.chordLocation(chordset.id) != nil {
                throw ChordStoreError(.failedPrecondition, "chordset id \(chordset.id) is in use again; cannot put it back")
            }
            for chord in chordset.chords where try state.chordLocation(chord.id) != nil || state.chordset(chord.id) != nil {
                throw ChordStoreError(.failedPrecondition, "chord id \(chord.id) is in use again; cannot put chordset \(chordset.id) back")
            }
        }
    }
}
