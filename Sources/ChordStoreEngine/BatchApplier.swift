import ChordStoreDomain

/// The commit logic both backends share: for each command in order, decide its event
/// against the state as changed by the commands before it, append the record, fold it.
struct BatchApplier: Sendable {
    var decider: Decider
    var epoch: UInt64

    /// Applies `batch` to `state`. Per-command failures are returned; a thrown error is a
    /// storage failure and means the whole batch must be discarded.
    func apply<State: StateWriting>(
        _ batch: [SubmittedCommand],
        to state: inout State,
        head: inout LogHead,
        now: Instant,
        generator: inout SplitMix64,
        append: (UInt64, [UInt8]) throws -> Void
    ) throws -> [Result<RecordedEvent, ChordStoreError>] {
        let timestamp = max(now, head.timestamp)
        var results: [Result<RecordedEvent, ChordStoreError>] = []
        results.reserveCapacity(batch.count)
        for submitted in batch {
            let event: Event
            do {
                try decider.validation.checkMetadata(submitted.context.session, name: "session")
                try decider.validation.checkMetadata(submitted.context.commandID, name: "command id")
                event = try decider.decide(submitted.command, state: state, timestamp: timestamp, using: &generator)
            } catch where error.code == .internal || error.code == .dataLoss {
                // Reading the state failed: a storage problem, not a refusal. Fail the
                // whole batch (its transaction is aborted) rather than commit around it.
                throw error
            } catch {
                results.append(.failure(error))
                continue
            }
            var recorded = RecordedEvent(
                sequence: head.sequence + 1, epoch: epoch, timestamp: timestamp,
                session: submitted.context.session, commandID: submitted.context.commandID,
                event: event, checksum: 0)
            let (bytes, checksum) = RecordCodec.encode(recorded, previousChecksum: head.checksum)
            recorded.checksum = checksum
            try append(recorded.sequence, bytes)
            try Fold.apply(event, to: &state)
            head = LogHead(sequence: recorded.sequence, checksum: checksum, timestamp: timestamp)
            results.append(.success(recorded))
        }
        return results
    }
}
