import ChordStoreRecords
import ChordStoreDomain
import Foundation
import Synchronization

/// Builds past states: from the newest snapshot file at or before the point (or the
/// last state built, when nearer), replaying the events in between. The cost is bounded
/// by the snapshot interval and the state's size, not by the log's length.
final class TimeTravel: Sendable {
    private let snapshots: SnapshotFiles?
    /// The last state built and its store's id, reused when the next read of that store
    /// is at or after it.
    private let cache = Mutex<(store: UInt32, past: PastState)?>(nil)

    /// Forgets the cached state (the log was truncated under it).
    func forget() { cache.withLock { $0 = nil } }
    /// Builds in progress, and the most allowed at once: each holds a copy of the state
    /// and a core for up to an interval's replay.
    private let building: ConcurrencyLimit

    init(snapshots: SnapshotFiles?, maxConcurrentBuilds: Int = 2) {
        self.snapshots = snapshots
        self.building = ConcurrencyLimit(maxConcurrentBuilds)
    }

    /// Store `name`'s state at `point` (its sequence numbers). Snapshot files are taken of
    /// store `default` only: another store's read replays its events from its first (or
    /// from the last state built of it).
    func state(asOf point: AsOf, store name: String, backend: any StorageBackend) throws(ChordStoreError) -> PastState {
        try building.run(orThrow: ChordStoreError(
            .resourceExhausted, "\(building.limit) reads of the past are being built; retry shortly")
        ) { () throws(ChordStoreError) in try build(point, store: name, backend: backend) }
    }

    private func build(_ point: AsOf, store name: String, backend: any StorageBackend) throws(ChordStoreError) -> PastState {
        try backend.withSnapshot(store: name) { snapshot in
            let storeID = snapshot.record.id
            let head = snapshot.record.head
            let target: UInt64
            switch point {
            case .sequence(let sequence):
                guard sequence <= head else {
                    throw ChordStoreError(.outOfRange, "sequence \(sequence) is past the end of the log (\(head))")
                }
                target = sequence
            case .time(let instant):
                target = try Self.lastSequence(atOrBefore: instant, in: snapshot, head: head)
            }
            let cached = cache.withLock { $0 }.flatMap { $0.store == storeID ? $0.past : nil }
            if let cached, cached.sequence == target { return cached }
            var start = (sequence: UInt64(0), state: InMemoryState(indexingChords: false))
            if let cached, cached.sequence < target { start = (cached.sequence, cached.state) }
            // A snapshot file only if it is nearer than the cached state, and of this log.
            if storeID == 0, let loaded = snapshots?.load(after: start.sequence, atMost: target, belongs: { sequence, checksum in
                var stored: UInt64?
                try? snapshot.forEachRecord(from: sequence) { found, record in
                    if found == sequence { stored = RecordCodec.storedChecksum(record) }
                    return false
                }
                return stored == checksum
            }) {
                start = loaded
            }
            var state = start.state
            if target > start.sequence {
                try snapshot.forEachRecord(from: start.sequence + 1) { sequence, record in
                    guard sequence <= target else { return false }
                    let fields = try RecordCodec.decodeReplayFields(record, sequence: sequence)
                    if case .allRestored(let deletedAt, _) = fields.event, state.deletedChordsets(at: deletedAt) == nil {
                        // The delete-all happened before the snapshot this replay started from.
                        state.adoptDeletedChordsets(try snapshot.deletedChordsets(at: deletedAt) ?? [], at: deletedAt)
                    }
                    try Fold.apply(fields.event, sequence: sequence, to: &state)
                    return sequence < target
                }
            }
            let past = PastState(sequence: target, state: state)
            cache.withLock { $0 = (storeID, past) }
            return past
        }
    }

    /// Binary search over the log's timestamps (commit times never decrease).
    private static func lastSequence(atOrBefore instant: Instant, in snapshot: any StoreSnapshot, head: UInt64) throws -> UInt64 {
        var low: UInt64 = 0  // timestamp(low) <= instant, or low = 0
        var high = head + 1  // timestamp(high) > instant, or high = head + 1
        while high - low > 1 {
            let middle = low + (high - low) / 2
            var timestamp: Instant?
            try snapshot.forEachRecord(from: middle) { sequence, record in
                timestamp = try RecordCodec.decodeReplayFields(record, sequence: sequence).timestamp
                return false
            }
            guard let timestamp else { throw ChordStoreError(.dataLoss, "event \(middle) is missing") }
            if timestamp <= instant { low = middle } else { high = middle }
        }
        return low
    }
}
