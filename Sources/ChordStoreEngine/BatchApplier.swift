import ChordStoreDomain

/// Where a batch appends its records, with the index of the command ids already applied
/// (so that a retried command, same id, is answered with its original event and writes
/// nothing). Each backend keeps both in the same transaction as the projections.
protocol LogAppending: ChangeLogReading {
    /// The event recorded for `commandID`, if a command with that id was applied.
    func event(forCommand commandID: String) throws -> RecordedEvent?
    /// Appends a record, and notes its command id (if not empty).
    mutating func append(_ sequence: UInt64, _ record: [UInt8], commandID: String) throws
}

/// The commit logic both backends share: for each command in order, decide its event
/// against the state as changed by the commands before it, append the record, fold it.
struct BatchApplier: Sendable {
    var decider: Decider
    var epoch: UInt64

    /// Applies `batch` to `state`. Per-command failures are returned; a thrown error is a
    /// storage failure and means the whole batch must be discarded.
    func apply<State: StateWriting, Changes: ChangeWriting, Log: LogAppending>(
        _ batch: [SubmittedCommand],
        to state: inout State,
        changes: inout Changes,
        log: inout Log,
        head: inout LogHead,
        now: Instant,
        generator: inout SplitMix64
    ) throws -> [Result<RecordedEvent, ChordStoreError>] {
        let timestamp = max(now, head.timestamp)
        var results: [Result<RecordedEvent, ChordStoreError>] = []
        results.reserveCapacity(batch.count)
        for submitted in batch {
            let commandID = submitted.context.commandID
            // A storage failure here throws: it fails the batch, not just this command.
            if !commandID.isEmpty, commandID.utf8.count <= decider.validation.limits.maxMetadataBytes,
               let original = try log.event(forCommand: commandID) {
                results.append(Self.repeated(submitted.command, original: original))
                continue
            }
            let decision: Decision
            do {
                try decider.validation.checkMetadata(submitted.context.session, name: "session")
                try decider.validation.checkMetadata(commandID, name: "command id")
                decision = try decider.decide(
                    submitted.command, session: submitted.context.session,
                    expectedRevision: submitted.context.expectedRevision, state: state, changes: changes, log: log,
                    timestamp: timestamp, using: &generator)
            } catch where error.code == .internal || error.code == .dataLoss {
                // Reading the state failed: a storage problem, not a refusal. Fail the
                // whole batch (its transaction is aborted) rather than commit around it.
                throw error
            } catch {
                results.append(.failure(error))
                continue
            }
            var recorded = RecordedEvent(
                sequence: try head.nextSequence(), epoch: epoch, timestamp: timestamp,
                session: submitted.context.session, commandID: submitted.context.commandID,
                event: decision.event, checksum: 0, mark: decision.mark)
            let (bytes, checksum) = RecordCodec.encode(recorded, previousChecksum: head.checksum)
            recorded.checksum = checksum
            try log.append(recorded.sequence, bytes, commandID: recorded.commandID)
            let touched = try Fold.apply(decision.event, sequence: recorded.sequence, to: &state)
            try ChangeFold.apply(recorded.change, chordsets: touched, to: &changes)
            head = LogHead(sequence: recorded.sequence, checksum: checksum, timestamp: timestamp, epoch: epoch)
            results.append(.success(recorded))
        }
        return results
    }

    /// The answer to a command whose id was already applied: its original event, or a
    /// refusal if the id was used for another kind of command.
    private static func repeated(_ command: Command, original: RecordedEvent) -> Result<RecordedEvent, ChordStoreError> {
        let sameKind = switch (command, original.mark) {
        case (.undo, .undoes?), (.redo, .redoes?): true
        case (.undo, _), (.redo, _), (_, .some): false
        case (_, nil): command.eventKindName == original.event.kindName
        }
        guard sameKind else {
            return .failure(ChordStoreError(
                .failedPrecondition,
                "command id \(original.commandID) was already used by event \(original.sequence) (\(original.event.kindName)), not a \(command.kindName)"))
        }
        return .success(original)
    }
}
