import ChordStoreRecords
import ChordStoreDomain
import Foundation
import Synchronization

/// Replays the log into a fresh in-memory state, for rebuild and verify, in a pipeline of
/// three threads: a helper thread reads its own snapshot of the log, checks every record
/// (sequence with no gap, checksum chain) and decodes it; the calling thread folds the
/// decoded events into the stores' states (``Fold``, and the registry of stores and
/// tokens); a third folds each store's changes (``ChangeFold``: undo stacks, revisions,
/// histories), which take of an event only the event itself and the chordsets its fold
/// touched, and become the stores' once both are done. Records up to `last` are the same
/// in every snapshot: the log only grows, except when replication cuts it, which happens
/// on the writer thread that runs the replay.
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

    /// Events the states took, for the changes' thread: a chunk's first events, each with
    /// the chordsets its fold touched (`nil`: an event of the stores or tokens).
    private enum Folded: Sendable {
        case events(first: UInt64, [ReplayFields], touched: [[UUID]?])
        case end
    }

    /// What the changes' thread leaves: every live store's changes, or where it stopped.
    private struct FoldedChanges: Sendable {
        var changes: [UInt32: InMemoryChanges] = [:]
        var failure: (error: ChordStoreError, sequence: UInt64)?
    }

    /// Replays the log's records up to `last` into every store's state, changes and
    /// command index (``StoreSet``, without the records); with `indexingChords`, states
    /// index their chords by id, as a live state does (rebuild and verify skip it).
    /// `capacities`: the room to make in each store as it is made.
    static func replay(
        _ backend: any StorageBackend, through last: UInt64, indexingChords: Bool = false,
        capacities: [UInt32: StoreSet.Capacity] = [:], progress: (UInt64, UInt64) -> Void
    ) throws(Failure) -> StoreSet {
        var set = StoreSet(keepsRecords: false, indexingChords: indexingChords, capacities: capacities, reservingChanges: false)
        let channel = Channel<Message>(capacity: 4)
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            produce(backend, through: last, into: channel)
            finished.signal()
        }
        defer {
            channel.cancel()
            finished.wait()
        }
        let folded = Channel<Folded>(capacity: 4)
        let changesDone = DispatchSemaphore(value: 0)
        let changesResult = Mutex(FoldedChanges())
        Thread.detachNewThread {
            let result = foldChanges(from: folded, capacities: capacities)
            changesResult.withLock { $0 = result }
            changesDone.signal()
        }
        // Ends the changes' thread (it reads to the end whatever happens) and returns the
        // first event it could not fold, if any: an earlier failure than the states'.
        var changesEnded = false
        func endChanges() -> FoldedChanges {
            if !changesEnded {
                changesEnded = true
                _ = folded.send(.end)
                changesDone.wait()
            }
            return changesResult.withLock { $0 }
        }
        func failure(_ error: ChordStoreError, at sequence: UInt64?, replayed: UInt64) -> Failure {
            if let early = endChanges().failure, sequence.map({ early.sequence < $0 }) ?? true {
                return Failure(error: early.error, sequence: early.sequence, replayed: early.sequence - 1)
            }
            return Failure(error: error, sequence: sequence, replayed: replayed)
        }
        defer { _ = endChanges() }
        var replayed: UInt64 = 0
        while true {
            switch channel.receive() {
            case .events(let first, let events):
                var touched: [[UUID]?] = []
                touched.reserveCapacity(events.count)
                for offset in events.indices {  // borrowed in place, not copied out
                    do {
                        touched.append(try StoreFold.apply(events[offset], record: [], to: &set, foldingChanges: false))
                    } catch {
                        if !touched.isEmpty { _ = folded.send(.events(first: first, events, touched: touched)) }
                        throw failure(.wrapping(error), at: first + UInt64(offset), replayed: replayed)
                    }
                    replayed += 1
                }
                _ = folded.send(.events(first: first, events, touched: touched))
                progress(replayed, last)
            case .failure(let error, let sequence):
                throw failure(error, at: sequence, replayed: replayed)
            case .end:
                guard replayed == last else {
                    throw failure(
                        ChordStoreError(.dataLoss, "the log ends at event \(replayed); its head is \(last)"), at: nil, replayed: replayed)
                }
                let changes = endChanges()
                if let early = changes.failure {
                    throw Failure(error: early.error, sequence: early.sequence, replayed: early.sequence - 1)
                }
                set.adoptChanges(changes.changes)
                return set
            }
        }
    }

    /// The changes' thread: folds each event the states took into its store's changes
    /// (made as the store is, with the room `capacities` gives it), in log order, until
    /// `.end`. After a failure it reads on to `.end` without folding, so that the sender
    /// never waits for room.
    private static func foldChanges(from channel: Channel<Folded>, capacities: [UInt32: StoreSet.Capacity]) -> FoldedChanges {
        func made(_ id: UInt32) -> InMemoryChanges {
            var changes = InMemoryChanges()
            if let capacity = capacities[id] { changes.reserveCapacity(chordsets: capacity.chordsets) }
            return changes
        }
        var result = FoldedChanges()
        result.changes[0] = made(0)
        while case .events(let first, let events, let touched) = channel.receive() {
            guard result.failure == nil else { continue }
            for offset in touched.indices {
                let event = events[offset]
                do throws(ChordStoreError) {
                    guard let chordsets = touched[offset] else {
                        switch event.event {
                        case .store(.created(let id, _)): result.changes[id] = made(id)
                        case .store(.deleted(let id, _)): result.changes[id] = nil
                        default: break
                        }
                        continue
                    }
                    guard let index = result.changes.index(forKey: event.store) else {
                        throw ChordStoreError(.internal, "the replay folded event \(event.logSequence) into store id \(event.store), which has no changes")
                    }
                    do {
                        try ChangeFold.apply(event.change, chordsets: chordsets, to: &result.changes.values[index])
                    } catch {
                        throw ChordStoreError.wrapping(error)
                    }
                } catch {
                    result.failure = (error, first + UInt64(offset))
                    break
                }
            }
        }
        return result
    }

    private static func produce(_ backend: any StorageBackend, through last: UInt64, into channel: Channel<Message>) {
        let chunkSize = 8_192
        var chunk: [ReplayFields] = []
        chunk.reserveCapacity(chunkSize)
        var first: UInt64 = 1
        var chain = RecordChain(expecting: 1, previousChecksum: 0)
        var failed = false
        do {
            try backend.forEachLogRecord(from: 1) { sequence, record in
                guard sequence <= last else { return false }
                do {
                    try chain.check(record, sequence: sequence)
                    let fields = try RecordCodec.decodeReplayFields(record, sequence: sequence)
                    guard fields.logSequence == sequence else {
                        throw ChordStoreError(.dataLoss, "the record stored as event \(sequence) says it is event \(fields.logSequence)")
                    }
                    chunk.append(fields)
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

/// A bounded, blocking channel between two threads.
final class Channel<Element: Sendable>: Sendable {
    private struct State {
        var items: [Element] = []
        var cancelled = false
    }

    private let state = Mutex(State())
    private let slots: DispatchSemaphore
    private let available = DispatchSemaphore(value: 0)

    /// Made at 0 and signalled `capacity` times: a semaphore freed below the value it was
    /// made with traps in libdispatch, and a cancelled channel may hold unread items.
    init(capacity: Int) {
        slots = DispatchSemaphore(value: 0)
        for _ in 0..<capacity { slots.signal() }
    }

    /// Waits for room, then queues `item`; returns `false` if the receiver has gone.
    func send(_ item: sending Element) -> Bool {
        slots.wait()
        let accepted = state.withLock { state -> Bool in
            if state.cancelled { return false }
            state.items.append(item)
            return true
        }
        if accepted { available.signal() } else { slots.signal() }
        return accepted
    }

    /// Waits for the next item.
    func receive() -> Element {
        available.wait()
        let item = state.withLock { $0.items.removeFirst() }
        slots.signal()
        return item
    }

    /// Tells the sender to stop: a blocked or later `send` returns `false`.
    func cancel() {
        state.withLock { $0.cancelled = true }
        slots.signal()
    }
}
