import Foundation

/// What a command is recorded as: its one event and, for undo and redo, the mark that
/// says which change the event reverts.
public struct Decision: Sendable, Hashable {
    /// The event to append.
    public var event: Event
    /// Set for undo and redo.
    public var mark: ChangeMark?

    /// Creates a decision.
    public init(event: Event, mark: ChangeMark? = nil) {
        self.event = event
        self.mark = mark
    }
}

/// Turns a command into the one event it causes, or refuses it. Pure: it reads the state
/// and draws randomness from the generator it is given, and changes nothing, so a
/// refused command writes nothing.
public struct Decider: Sendable {
    /// The rules commands are checked against.
    public var validation: Validation

    /// Creates a decider enforcing `limits`.
    public init(limits: Limits = Limits()) {
        self.validation = Validation(limits: limits)
    }

    /// Validates `command`, issued by `session`, against `state` and returns what to record.
    ///
    /// - Parameters:
    ///   - expectedRevision: if set, the revision the command's item must be at (see
    ///     ``revision(for:state:changes:)``); otherwise the command fails with `aborted`.
    ///   - changes: the undo and redo stacks and revisions.
    ///   - log: where undo and redo read the event they revert.
    ///   - timestamp: the commit time; a new chordset's default creation date.
    ///   - generator: the source of new ids and random colours.
    public func decide(
        _ command: Command,
        session: String,
        expectedRevision: UInt64? = nil,
        state: some StateReading,
        changes: some ChangeReading,
        log: some ChangeLogReading,
        timestamp: Instant,
        using generator: inout some IDGenerator
    ) throws(ChordStoreError) -> Decision {
        do {
            if let expectedRevision {
                let current = try revision(for: command, state: state, changes: changes)
                guard current == expectedRevision else {
                    throw ChordStoreError(
                        .aborted, "expected revision \(expectedRevision), but the \(revisionSubject(command)) is at revision \(current)",
                        reason: .revisionMismatch, currentRevision: current)
                }
            }
            switch command {
            case .undo:
                return try undo(session: session, state: state, changes: changes, log: log)
            case .redo:
                return try redo(session: session, state: state, changes: changes, log: log)
            default:
                return Decision(event: try decideUnchecked(command, state: state, timestamp: timestamp, using: &generator))
            }
        } catch let error as ChordStoreError {
            throw error
        } catch {
            throw ChordStoreError(.internal, "reading the state failed: \(error)", cause: error)
        }
    }

    /// Validates a plain command (not undo or redo) against `state` and returns its event.
    public func decide(
        _ command: Command,
        state: some StateReading,
        timestamp: Instant,
        using generator: inout some IDGenerator
    ) throws(ChordStoreError) -> Event {
        try decide(
            command, session: "", state: state, changes: InMemoryChanges(), log: EmptyChangeLog(),
            timestamp: timestamp, using: &generator).event
    }

    private func decideUnchecked(
        _ command: Command,
        state: some StateReading,
        timestamp: Instant,
        using generator: inout some IDGenerator
    ) throws -> Event {
        switch command {
        case .addChordset(let add):
            return .chordsetAdded(try newChordset(add, state: state, timestamp: timestamp, using: &generator))

        case .renameChordset(let id, let title):
            try validation.checkTitle(title)
            let chordset = try existingChordset(id, state: state)
            return .chordsetRenamed(id: id, title: title, previousTitle: chordset.title)

        case .deleteChordset(let id):
            return .chordsetDeleted(try existingChordset(id, state: state))

        case .setChordColor(let chordID, let color):
            try validation.checkColor(color)
            let (chord, chordsetID) = try existingChord(chordID, state: state)
            return .chordColorSet(chordID: chordID, chordsetID: chordsetID, color: color, previous: chord.color)

        case .setChordBPM(let chordID, let bpm):
            try validation.checkBPM(bpm)
            let (chord, chordsetID) = try existingChord(chordID, state: state)
            return .chordBPMSet(chordID: chordID, chordsetID: chordsetID, bpm: bpm, previous: chord.bpm)

        case .setControlsChord(let set):
            try validation.checkBPM(set.bpm)
            try validation.checkColor(set.color)
            let previous = try state.controlsChord()
            let id = set.id ?? previous?.id ?? generator.nextID(at: timestamp)
            if id != previous?.id, try state.chordLocation(id) != nil {
                throw ChordStoreError(.alreadyExists, "chord id \(id) is already in use", reason: .idInUse)
            }
            if id != previous?.id { try checkNotAChordset(id, state: state) }
            return .controlsChordSet(Chord(id: id, position: 0, bpm: set.bpm, color: set.color), previous: previous)

        case .moveChordset(let id, let toIndex):
            let chordset = try existingChordset(id, state: state)
            let count = try state.chordsetCount()
            guard (0..<count).contains(toIndex) else {
                throw ChordStoreError(.invalidArgument, "index \(toIndex) is outside 0...\(count - 1)")
            }
            return .chordsetMoved(id: id, from: chordset.index, to: toIndex)

        case .deleteAll:
            return .allDeleted(count: try state.chordsetCount())

        case .undo, .redo:
            throw ChordStoreError(.internal, "\(command.kindName) is decided by undo(session:) and redo(session:)")
        }
    }

    private func newChordset(
        _ add: AddChordset,
        state: some StateReading,
        timestamp: Instant,
        using generator: inout some IDGenerator
    ) throws -> Chordset {
        try validation.checkTitle(add.title)
        if let date = add.creationDate { try validation.checkCreationDate(date) }
        let count = try state.chordsetCount()
        guard count < validation.limits.maxChordsets else {
            throw ChordStoreError(
                .resourceExhausted, "the store holds \(count) chordsets, its limit")
        }
        // A chordset the store names gets its chords' ids from its own (DerivedChordIDs):
        // the state then indexes none of them.
        let id = add.id ?? generator.nextChordsetID(at: timestamp)
        let derivesChordIDs = add.id == nil
        if try state.chordset(id) != nil {
            throw ChordStoreError(.alreadyExists, "chordset \(id) already exists", reason: .idInUse)
        }
        // One id names one thing: a client's chordset id may not be a chord's. (The ids
        // the store draws are new to it.)
        if add.id != nil, try state.chordLocation(id) != nil {
            throw ChordStoreError(.alreadyExists, "id \(id) is already a chord's", reason: .idInUse)
        }
        // The derived ids a client may have taken, asked once (the chordset is new, so a
        // lookup of each would first look for it in vain).
        let derivedIDsTaken = derivesChordIDs ? try state.holdsChordID(derivedFrom: id) : false

        var specs = add.chords
        if specs.isEmpty {
            specs = (0..<Chordset.chordCount).map { ChordSpec(position: $0) }
        }
        guard specs.count == Chordset.chordCount else {
            throw ChordStoreError(
                .invalidArgument,
                "a chordset has exactly \(Chordset.chordCount) chords; \(specs.count) were given")
        }
        // Eight positions and nine ids: a bit mask and a scan (two growing sets were most
        // of this function's cost, which every add pays on the writer).
        var seenPositions: UInt8 = 0
        var seenIDs: [UUID] = [id]
        seenIDs.reserveCapacity(Chordset.chordCount + 1)
        var chords: [Chord] = []
        chords.reserveCapacity(Chordset.chordCount)
        for spec in specs {
            try validation.checkPosition(spec.position)  // 0..<8: the shift below is in range
            guard seenPositions & UInt8(1) << spec.position == 0 else {
                throw ChordStoreError(.invalidArgument, "chord position \(spec.position) is given twice")
            }
            seenPositions |= UInt8(1) << spec.position
            if let bpm = spec.bpm { try validation.checkBPM(bpm) }
            if let color = spec.color { try validation.checkColor(color) }
            let chordID = spec.id
                ?? (derivesChordIDs ? DerivedChordIDs.chordID(of: id, position: spec.position) : generator.nextID(at: timestamp))
            guard !seenIDs.contains(chordID) else {
                throw ChordStoreError(.alreadyExists, "id \(chordID) is given twice in one chordset", reason: .idInUse)
            }
            seenIDs.append(chordID)
            // A derived id is looked up only when one of the eight is taken.
            let mayBeTaken = spec.id != nil || !derivesChordIDs || derivedIDsTaken
            if mayBeTaken, try state.chordLocation(chordID) != nil {
                throw ChordStoreError(.alreadyExists, "chord id \(chordID) is already in use", reason: .idInUse)
            }
            if spec.id != nil { try checkNotAChordset(chordID, state: state) }
            chords.append(Chord(
                id: chordID,
                position: spec.position,
                bpm: spec.bpm ?? validation.limits.defaultBPM,
                color: spec.color ?? .random(using: &generator)))
        }
        chords.sort { $0.position < $1.position }
        return Chordset(
            id: id, title: add.title, creationDate: add.creationDate ?? timestamp,
            index: count, chords: chords)
    }

    /// Refuses a client's chord id that names a chordset: one id names one thing.
    func checkNotAChordset(_ id: UUID, state: some StateReading) throws {
        if try state.chordset(id) != nil {
            throw ChordStoreError(.alreadyExists, "id \(id) is already a chordset's", reason: .idInUse)
        }
    }

    func existingChordset(_ id: UUID, state: some StateReading) throws -> Chordset {
        guard let chordset = try state.chordset(id) else {
            throw ChordStoreError(.notFound, "no chordset has id \(id)", reason: .chordsetNotFound)
        }
        return chordset
    }

    func existingChord(_ id: UUID, state: some StateReading) throws -> (Chord, UUID?) {
        switch try state.chordLocation(id) {
        case .chordset(let chordsetID, let position):
            guard let chordset = try state.chordset(chordsetID), chordset.chords.indices.contains(position) else {
                throw ChordStoreError(.internal, "chord \(id) points at a missing chordset \(chordsetID)")
            }
            return (chordset.chords[position], chordsetID)
        case .controls:
            guard let chord = try state.controlsChord() else {
                throw ChordStoreError(.internal, "chord \(id) points at a missing controls chord")
            }
            return (chord, nil)
        case nil:
            throw ChordStoreError(.notFound, "no chord has id \(id)", reason: .chordNotFound)
        }
    }
}
