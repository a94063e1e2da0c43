import ChordStoreRecords
import ChordStoreDomain
import Foundation
import Synchronization

/// Replays the log into a fresh in-memory state, for rebuild and verify, on two cores: a
/// helper thread reads its own snapshot of the log, checks every record (sequence with no
/// gap, checksum chain) and decodes it; the calling thread folds the decoded events.
/// Records up to `last` are the same in every snapshot: the log only grows, except when
/// replication cuts it, which happens on the writer thread that runs the replay.
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

    /// Replays the log's records up to `last` into every store's state, changes and
    /// command index (``StoreSet``, without the records); with `indexingChords`, states
    /// index their chords by id, as a live state does (rebuild and verify skip it).
    /// `capacities`: the room to make in each store as it is made.
    static func replay(
        _ backend: any StorageBackend, through last: UInt64, indexingChords: Bool = false,
        capacities: [UInt32: StoreSet.Capacity] = [:], progress: (UInt64, UInt64) -> Void
    ) throws(Failure) -> StoreSet {
        var set = StoreSet(keepsRecords: false, indexingChords: indexingChords, capacities: capacities)
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
        var replayed: UInt64 = 0
        while true {
            switch channel.receive() {
            case .events(let first, let events):
                for offset in events.indices {  // borrowed in place, not copied out
                    do {
                        try StoreFold.apply(events[offset], record: [], to: &set)
                    } catch {
                        throw Failure(error: .wrapping(error), sequence: first + UInt64(offset), replayed: replayed)
                    }
                    replayed += 1
                }
                progress(replayed, last)
            case .failure(let error, let sequence):
                throw Failure(error: error, sequence: sequence, replayed: replayed)
            case .end:
                guard replayed == last else {
                    throw Failure(
                        error: ChordStoreError(.dataLoss, "the log ends at event \(replayed); its head is \(last)"),
                        sequence: nil, replayed: replayed)
                }
                return set
            }
        }
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
