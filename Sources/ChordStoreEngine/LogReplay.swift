import ChordStoreRecords
import ChordStoreDomain
import Foundation
import Synchronization

/// Replays the log into a fresh in-memory state (rebuild, verify, a live state's start),
/// or goes on from a saved one (a live state's start from ``LiveStateFile``),
/// in a pipeline of three threads: a helper thread reads its own snapshot of the log,
/// checks every record (sequence with no gap, checksum chain) and decodes it; the calling
/// thread folds the decoded events into the stores' states (``Fold``, and the registry of
/// stores and tokens); a third folds each store's changes (``ChangeFold``: undo stacks,
/// revisions, histories), which take of an event only the event itself and the chordsets
/// its fold touched, and become the stores' once both are done. Records up to `last` are
/// the same in every snapshot: the log only grows, except when replication cuts it, which
/// happens on the writer thread that runs the replay.
enum LogReplay {
    /// Where a replay stopped and why.
    struct Failure: Error {
        var error: ChordStoreError
        /// The record at fault, when the problem is one record's.
        var sequence: UInt64?
        /// Records checked and folded before the problem.
        var replayed: UInt64
    }

    private enum Message: Sendable {
        case events(first: UInt64, [ReplayFields])
        case failure(ChordStoreError, sequence: UInt64)
        case end
    }

    /// A chunk of events the states took, for the changes' thread: each event with the
    /// chordsets its fold touched (`nil`: an event of the stores or tokens). A chunk the
    /// states failed in is not sent: the replay ends there.
    private enum TouchedChunk: Sendable {
        case events([ReplayFields], touched: [TouchedChordsets?])
        /// Stores evicted in the set the replay went on from, folded from the log before
        /// the next chunk's events: their changes (``StoreSet/Store/resident(records:)``).
        case loaded([UInt32: InMemoryChanges])
        /// Stores the replay evicted to stay within its budget: their changes are dropped.
        case evicted([UInt32])
        case end
    }

    /// Replays the log's records up to `last` into every store's state, changes and
    /// command index (``StoreSet``, without the records); with `indexingChords`, states
    /// index their chords by id, as a live state does (rebuild and verify skip it).
    /// `capacities`: the room to make in each store as it is made. With `start`, the
    /// replay goes on from that set (a saved live state: ``LiveStateFile``) with the
    /// records after its head, the first of which must chain to it; the set's own
    /// settings apply then (`indexingChords` and `capacities` are not used), and
    /// ``Failure/replayed`` counts from its head. A store evicted in `start` (a saved
    /// state under a memory bound) stays so unless an event of the replay is its: it is
    /// then folded from the log first, by `load`, and stays in memory. With `budget` (a
    /// memory bound: ``ChordStore/Options/maxStateMemory``; it needs `load`), whenever a
    /// chunk leaves the state over it, the stores written least recently are evicted
    /// (``ResidencyPlan``, their last event as their last use), and loaded again by `load`
    /// if a later event is theirs.
    static func replay(
        _ backend: any StorageBackend, through last: UInt64, indexingChords: Bool = false,
        capacities: [UInt32: StoreSet.Capacity] = [:], from start: consuming StoreSet? = nil,
        budget: Int? = nil, load: (StoreSet.Store) throws -> StoreSet.Store = { $0 }, progress: (UInt64, UInt64) -> Void
    ) throws(Failure) -> StoreSet {
        var set = start ?? StoreSet(keepsRecords: false, indexingChords: indexingChords, capacities: capacities, reservingChanges: false)
        let after = set.logHead
        precondition(after.sequence <= last, "a replay from event \(after.sequence) through \(last)")
        // The changes go on in the changes' thread, and come back at the end.
        let initialChanges = set.takeChanges()
        let channel = Channel<Message>(capacity: 4)
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            GroupCommitWriter.nameThisThread("cs-replay-read")
            produce(backend, after: after, through: last, into: channel)
            finished.signal()
        }
        defer {
            channel.cancel()
            finished.wait()
        }
        // The changes' thread takes every chunk the states took, and ends at `.end`, which
        // every way out of this function sends (once).
        let touchedChunks = Channel<TouchedChunk>(capacity: 4)
        let changesDone = DispatchSemaphore(value: 0)
        let changesResult = Mutex<[UInt32: InMemoryChanges]>([:])
        Thread.detachNewThread {
            GroupCommitWriter.nameThisThread("cs-replay-changes")
            let changes = foldChanges(from: touchedChunks, capacities: capacities, initial: initialChanges)
            changesResult.withLock { $0 = changes }
            changesDone.signal()
        }
        var changesEnded = false
        func endChanges() {
            guard !changesEnded else { return }
            changesEnded = true
            _ = touchedChunks.send(.end)
            changesDone.wait()
        }
        defer { endChanges() }
        var replayed: UInt64 = 0
        while true {
            switch channel.receive() {
            case .events(let first, let events):
                var touched: [TouchedChordsets?] = []
                touched.reserveCapacity(events.count)
                var loaded: [UInt32: InMemoryChanges] = [:]
                // Each event read in place through the buffer, not copied out of the array.
                try events.withUnsafeBufferPointer { (buffer) throws(Failure) in
                    for offset in buffer.indices {
                        if set.isEvicted(buffer[offset].store), !buffer[offset].event.isServerEvent, let store = set[buffer[offset].store] {
                            // Not the log's record at fault: the saved state's index of the store.
                            do {
                                var resident = try load(store)
                                loaded[store.record.id] = resident.changes
                                resident.changes = InMemoryChanges()  // the changes' thread has them
                                set.install(resident)
                            } catch {
                                throw Failure(error: .wrapping(error), sequence: nil, replayed: replayed)
                            }
                        }
                        do {
                            touched.append(try StoreFold.apply(fieldsAt: buffer.baseAddress! + offset, record: [], to: &set, foldingChanges: false))
                        } catch {
                            throw Failure(error: .wrapping(error), sequence: first + UInt64(offset), replayed: replayed)
                        }
                        replayed += 1
                    }
                }
                if !loaded.isEmpty { _ = touchedChunks.send(.loaded(loaded)) }
                _ = touchedChunks.send(.events(events, touched: touched))
                if let budget, set.estimatedBytes * ResidencyPlan.copies > budget, set.residentCount > 1 {
                    let evictions = ResidencyPlan.evictions(set.residency(), lastUse: set.lastEvents(), bound: budget)
                    set.evict(evictions)
                    _ = touchedChunks.send(.evicted(evictions))
                }
                progress(replayed, last - after.sequence)
            case .failure(let error, let sequence):
                throw Failure(error: error, sequence: sequence, replayed: replayed)
            case .end:
                guard after.sequence + replayed == last else {
                    throw Failure(
                        error: ChordStoreError(.dataLoss, "the log ends at event \(after.sequence + replayed); its head is \(last)"),
                        sequence: nil, replayed: replayed)
                }
                endChanges()
                set.adoptChanges(changesResult.withLock { changes in
                    defer { changes = [:] }  // taken, not copied: the set holds the only reference
                    return changes
                })
                return set
            }
        }
    }

    /// The changes' thread: folds each event the states took into its store's changes
    /// (made as the store is, with the room `capacities` gives it), in log order, until
    /// `.end`. The states' fold checked every event first (its store is live), and
    /// changes in memory cannot fail (``InMemoryChanges/apply(_:chordsets:)``).
    private static func foldChanges(
        from chunks: Channel<TouchedChunk>, capacities: [UInt32: StoreSet.Capacity], initial: [UInt32: InMemoryChanges]?
    ) -> [UInt32: InMemoryChanges] {
        var changes: [UInt32: InMemoryChanges] = initial ?? [0: StoreSet.newChanges(reserving: capacities[0])]
        while true {
            let events: [ReplayFields], touched: [TouchedChordsets?]
            switch chunks.receive() {
            case .events(let chunk, let folded): (events, touched) = (chunk, folded)
            case .loaded(let loaded):
                changes.merge(loaded) { _, folded in folded }
                continue
            case .evicted(let ids):
                for id in ids { changes[id] = InMemoryChanges() }
                continue
            case .end: return changes
            }
            // Each event read in place through the buffer, not copied out of the array (which
            // the states' thread sends with one report per event).
            precondition(touched.count == events.count, "a chunk of \(events.count) events with \(touched.count) reports")
            events.withUnsafeBufferPointer { events in
                for offset in touched.indices {
                    guard let chordsets = touched[offset] else {
                        switch events[offset].event {
                        case .store(.created(let id, _)): changes[id] = StoreSet.newChanges(reserving: capacities[id])
                        case .store(.deleted(let id, _)): changes[id] = nil
                        default: break
                        }
                        continue
                    }
                    guard let index = changes.index(forKey: events[offset].store) else {
                        preconditionFailure("the replay's states took event \(events[offset].logSequence) of store id \(events[offset].store), which has no changes")
                    }
                    changes.values[index].apply(events[offset].change, touched: chordsets)
                }
            }
        }
    }

    private static func produce(_ backend: any StorageBackend, after: LogHead, through last: UInt64, into channel: Channel<Message>) {
        let chunkSize = 8_192
        var chunk: [ReplayFields] = []
        chunk.reserveCapacity(chunkSize)
        var first = after.sequence + 1
        var chain = RecordChain(expecting: first, previousChecksum: after.checksum)
        var failed = false
        do {
            try backend.forEachLogRecord(from: first) { sequence, record in
                guard sequence <= last else { return false }
                do {
                    try chain.check(record, sequence: sequence)
                    // Read into its place in the chunk, not copied there.
                    chunk.append(.empty)
                    do {
                        try RecordCodec.decodeReplayFields(record, sequence: sequence, into: &chunk[chunk.count - 1])
                        let read = chunk[chunk.count - 1].logSequence
                        guard read == sequence else {
                            throw ChordStoreError(.dataLoss, "the record stored as event \(sequence) says it is event \(read)")
                        }
                    } catch {
                        chunk.removeLast()  // the chunk sent below holds whole events only
                        throw error
                    }
                } catch {
                    failed = true
                    if !chunk.isEmpty { _ = channel.send(.events(first: first, chunk)) }
                    _ = channel.send(.failure(.wrapping(error), sequence: sequence))
                    return false
                }
                if chunk.count == chunkSize {
                    guard channel.send(.events(first: first, chunk)) else { return false }
                    first = chain.expected
                    chunk.removeAll(keepingCapacity: true)
                }
                return true
            }
        } catch {
            failed = true
            _ = channel.send(.failure(.wrapping(error), sequence: chain.expected))
        }
        guard !failed else { return }
        if !chunk.isEmpty { _ = channel.send(.events(first: first, chunk)) }
        _ = channel.send(.end)
    }
}
