import ChordStoreRecords
import ChordStoreDomain

/// Appends events exported from a store to a store of this log (`ImportEvents`): each
/// must be the store's next event, no older than the one before it, with a command id
/// not used in the store yet, and acceptable to ``ChordStoreDomain/Decider/checkImported(_:sequence:session:mark:state:changes:)``.
/// It keeps its sequence number, time, session, command id and undo mark; it gets this
/// log's position, epoch and checksum, and no token. A thrown error means the backend must
/// discard the whole batch.
enum ImportApplier {
    /// How far ahead of this server's clock an imported event's time may be (another
    /// server's clock may run ahead): one minute, in microseconds.
    static let maxClockSkew: Int64 = 60_000_000

    static func apply(
        _ events: [RecordedEvent], store name: String, epoch: UInt64, decider: Decider, now: Instant = .now, to space: inout some StoreSpace
    ) throws -> LogHead {
        let name = StoreName.resolved(name)
        try StoreName.check(name)
        guard var store = try space.store(named: name) else { throw ChordStoreError(.notFound, "there is no store named \(name)", reason: .storeNotFound) }
        let latest = Instant(microsecondsSince1970: now.microsecondsSince1970 + maxClockSkew)
        for imported in events {
            guard imported.sequence == store.head &+ 1 else {
                throw ChordStoreError(
                    .failedPrecondition,
                    "event \(imported.sequence) does not follow store \(name)'s last event, \(store.head): an import goes on where the store ends")
            }
            if store.head > 0, imported.timestamp < store.headTimestamp {
                throw ChordStoreError(
                    .invalidArgument, "event \(imported.sequence) was committed at \(imported.timestamp), before the event before it (\(store.headTimestamp))")
            }
            // Commit times never go backwards in a log: a time ahead of this server's clock
            // would hold every later commit, in every store, at that time.
            guard imported.timestamp <= latest else {
                throw ChordStoreError(
                    .invalidArgument, "event \(imported.sequence) was committed at \(imported.timestamp), later than this server's clock allows (\(latest))")
            }
            try space.withStore(store) { state, changes, log in
                try decider.checkImported(
                    imported.event, sequence: imported.sequence, session: imported.session, mark: imported.mark, state: state, changes: changes)
                guard !imported.commandID.isEmpty else { return }
                try decider.validation.checkMetadata(imported.commandID, name: "command id")
                if try log.event(forCommand: imported.commandID) != nil {
                    throw ChordStoreError(.invalidArgument, "event \(imported.sequence) has command id \(imported.commandID), which an earlier event has")
                }
            }
            let logSequence = try space.logHead.nextSequence()
            var recorded = RecordedEvent(
                sequence: imported.sequence, epoch: epoch, timestamp: imported.timestamp, session: imported.session,
                commandID: imported.commandID, event: imported.event, checksum: 0, mark: imported.mark, store: store.id,
                logSequence: logSequence)
            let (bytes, checksum) = RecordCodec.encode(recorded, previousChecksum: space.logHead.checksum)
            recorded.checksum = checksum
            try space.appendRecord(logSequence, bytes)
            try StoreFold.apply(ReplayFields(recorded), record: bytes, to: &space)
            // The log's time stays the latest commit's: the next command's time follows it.
            space.logHead = LogHead(
                sequence: logSequence, checksum: checksum, timestamp: max(space.logHead.timestamp, imported.timestamp), epoch: epoch)
            guard let advanced = try space.store(id: store.id) else { throw ChordStoreError(.internal, "store \(name) went away during an import") }
            store = advanced
        }
        return space.logHead
    }
}
