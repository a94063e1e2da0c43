import Foundation

extension Decider {
    /// Checks that `event`, recorded as event `sequence` of another store's log (an
    /// import), may follow `state` and `changes` here: what a command deciding it would
    /// have checked. Titles, tempi, colours, positions and dates obey ``Validation``; the
    /// ids it adds are free and those it names exist; every "previous" value it carries
    /// is the current one (so that undoing it restores this state); an undo or redo
    /// mark names the session's next change to undo or redo; no store or token event is
    /// taken. Throws `invalidArgument` saying what does not fit.
    public func checkImported(
        _ event: Event, sequence: UInt64, session: String, mark: ChangeMark?, state: some StateReading,
        changes: some ChangeReading
    ) throws {
        func refuse(_ reason: String) -> ChordStoreError {
            ChordStoreError(.invalidArgument, "event \(sequence) (\(event.kindName)) \(reason)")
        }
        try validation.checkMetadata(session, name: "session")
        switch mark {
        case nil: break
        case .undoes(let target):
            guard try changes.undoTop(session) == target else { throw refuse("undoes event \(target), which is not session \(session)'s next change to undo") }
        case .redoes(let target):
            guard try changes.redoTop(session) == target else { throw refuse("redoes event \(target), which is not session \(session)'s next change to redo") }
        }
        switch event {
        case .chordsetAdded(let chordset):
            guard try state.chordset(chordset.id) == nil, try state.chordLocation(chordset.id) == nil else {
                throw refuse("adds chordset \(chordset.id), whose id is in use")
            }
            let count = try state.chordsetCount()
            guard count < validation.limits.maxChordsets else { throw refuse("would hold more than \(validation.limits.maxChordsets) chordsets") }
            guard (0...count).contains(chordset.index) else { throw refuse("adds a chordset at index \(chordset.index) of \(count)") }
            try checkNew(chordset, state: state, refuse: refuse)
        case .chordsetRenamed(let id, let title, let previousTitle):
            guard let stored = try state.chordset(id) else { throw refuse("names chordset \(id), which does not exist") }
            guard stored.title == previousTitle else { throw refuse("says the title was \"\(previousTitle)\"; it is \"\(stored.title)\"") }
            try validation.checkTitle(title)
        case .chordsetDeleted(let chordset):
            guard let stored = try state.chordset(chordset.id) else { throw refuse("names chordset \(chordset.id), which does not exist") }
            guard stored == chordset else { throw refuse("deletes chordset \(chordset.id) as it is not now") }
        case .chordColorSet(let chordID, let chordsetID, let color, let previous):
            let chord = try existing(chordID, in: chordsetID, state: state, refuse: refuse)
            guard chord.color == previous else { throw refuse("says chord \(chordID)'s colour was another") }
            try validation.checkColor(color)
        case .chordBPMSet(let chordID, let chordsetID, let bpm, let previous):
            let chord = try existing(chordID, in: chordsetID, state: state, refuse: refuse)
            guard chord.bpm == previous else { throw refuse("says chord \(chordID)'s bpm was \(previous); it is \(chord.bpm)") }
            try validation.checkBPM(bpm)
        case .controlsChordSet(let chord, let previous):
            guard try state.controlsChord() == previous else { throw refuse("says the controls chord was another") }
            if let chord {
                try validation.checkBPM(chord.bpm)
                try validation.checkColor(chord.color)
                guard chord.position == 0 else { throw refuse("gives the controls chord position \(chord.position), not 0") }
                if chord.id != previous?.id, try state.chordLocation(chord.id) != nil || state.chordset(chord.id) != nil {
                    throw refuse("gives the controls chord id \(chord.id), which is in use")
                }
            }
        case .chordsetMoved(let id, let from, let to):
            guard let stored = try state.chordset(id) else { throw refuse("names chordset \(id), which does not exist") }
            guard stored.index == from else { throw refuse("moves chordset \(id) from index \(from); it is at \(stored.index)") }
            let count = try state.chordsetCount()
            guard (0..<count).contains(to) else { throw refuse("moves a chordset to index \(to) of \(count)") }
        case .allDeleted(let count):
            let live = try state.chordsetCount()
            guard count == live else { throw refuse("deletes \(count) chordsets; the store holds \(live)") }
        case .allRestored(let deletedAt, let count):
            guard let deleted = try state.deletedChordsets(at: deletedAt), deleted.count == count else {
                throw refuse("restores \(count) chordsets deleted by event \(deletedAt), which deleted no such set")
            }
            do {
                try checkRestorable(deleted, state: state, extra: count)
            } catch let error as ChordStoreError {
                throw refuse("cannot restore: \(error.message)")
            }
        case .store, .token:
            throw refuse("is an event of the whole server; an export holds a store's events only")
        }
    }

    /// A chordset an imported event adds: valid values, eight chords at positions 0…7,
    /// chord ids unique and free.
    private func checkNew(_ chordset: Chordset, state: some StateReading, refuse: (String) -> ChordStoreError) throws {
        try validation.checkTitle(chordset.title)
        try validation.checkCreationDate(chordset.creationDate)
        guard chordset.chords.map(\.position) == Array(0..<Chordset.chordCount) else {
            throw refuse("has chords at positions \(chordset.chords.map(\.position)), not 0…7")
        }
        var ids: Set<UUID> = [chordset.id]
        for chord in chordset.chords {
            try validation.checkBPM(chord.bpm)
            try validation.checkColor(chord.color)
            guard ids.insert(chord.id).inserted, try state.chordLocation(chord.id) == nil, try state.chordset(chord.id) == nil else {
                throw refuse("gives chord id \(chord.id) twice, or one in use")
            }
        }
    }

    /// The chord an imported event names, in `chordsetID` (`nil`: the controls chord).
    private func existing(_ chordID: UUID, in chordsetID: UUID?, state: some StateReading, refuse: (String) -> ChordStoreError) throws -> Chord {
        if let chordsetID {
            guard let chord = try state.chordset(chordsetID)?.chords.first(where: { $0.id == chordID }) else {
                throw refuse("names chord \(chordID) of chordset \(chordsetID), which does not exist")
            }
            return chord
        }
        guard let chord = try state.controlsChord(), chord.id == chordID else { throw refuse("names controls chord \(chordID), which is not set") }
        return chord
    }
}
