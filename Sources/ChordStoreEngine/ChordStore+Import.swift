public import ChordStoreDomain

extension ChordStore {
    /// Appends `events`, exported from a store (``RecordedEvent/init(envelope:)`` of
    /// what `ReadLog` sent), to store `name`, in one durable commit on the writer thread:
    /// whole, or nothing with the first refusal. The first must follow the store's last
    /// event (sequence 1 for an empty store; `failedPrecondition` otherwise), each next
    /// one the one before. Each keeps its sequence number, time, session, command id and
    /// undo mark, and is checked as a command would be (`invalidArgument` naming the
    /// event); its store, log position, epoch and checksum are this log's, and it names
    /// no token. Refused on a follower, and past a coordinated leader's lease. Returns the store's last event and its log position.
    public func importEvents(_ events: [RecordedEvent], store name: String = StoreName.default) async throws(ChordStoreError) -> (sequence: UInt64, logSequence: UInt64) {
        guard let last = events.last else {
            let head = try lastSequence(store: name)
            return (head, try lastLogSequence())
        }
        let backend = self.backend, writer = self.writer, decider = importDecider
        let (head, lapsed) = try await writer.exclusive { () -> Result<(LogHead, Bool), ChordStoreError> in
            if let refusal = writer.refusal { return .failure(refusal) }
            return Result { () throws(ChordStoreError) in
                let head = try backend.importEvents(events, store: name, epoch: writer.currentEpoch, decider: decider)
                return (head, writer.refusal != nil)
            }
        }.get()
        notifier.published(head.sequence)
        // As for commands: an import that ended after the node stopped leading, or past
        // its lease, is not acknowledged.
        if lapsed { throw GroupCommitWriter.lapsedDuringCommit(head.sequence) }
        return (last.sequence, head.sequence)
    }
}
