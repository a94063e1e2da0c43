public import ChordStoreDomain
public import Foundation
import Synchronization

/// A point in the log's past.
public enum AsOf: Sendable, Hashable {
    /// Just after the event with this sequence number (0: before the first event).
    case sequence(UInt64)
    /// Just after the last event committed at or before this time.
    case time(Instant)
}

/// The state as it was at one point of the log: what a read as of that point answers.
public struct PastState: Sendable {
    /// The last event applied (0: the empty store before the first event).
    public let sequence: UInt64
    let state: InMemoryState

    /// Chordsets in `order`, at most `limit` of them.
    public func chordsets(order: ChordsetOrder = .creationDate, limit: Int? = nil) -> [Chordset] {
        let all = state.chordsetIDsInOrder.compactMap(state.chordset)
        let sorted: [Chordset] = switch order {
        case .index: all
        case .creationDate: all.sorted(by: ChordsetSorting.byCreation)
        case .title: all.sorted(by: ChordsetSorting.byTitle)
        }
        return limit.map { Array(sorted.prefix($0)) } ?? sorted
    }

    /// The chordset with `id` as it was, or `nil` if it did not exist then.
    public func chordset(_ id: UUID) -> Chordset? { state.chordset(id) }

    /// The counts as they were.
    public var profile: Profile {
        Profile(
            chordsets: state.chordsetCount(), chords: state.chordCount(),
            hasControlsChord: state.controlsChord() != nil, lastSequence: sequence)
    }

    /// The whole state as a comparable value.
    public var snapshot: StateSnapshot {
        get throws { try StateSnapshot(of: state) }
    }
}

/// Builds past states: from the newest snapshot file at or before the point (or the
/// last state built, when nearer), replaying the events in between. The cost is bounded
/// by the snapshot interval and the state's size, not by the log's length.
final class TimeTravel: Sendable {
    private let snapshots: SnapshotFiles?
    /// The last state built, reused when the next read is at or after it.
    private let cache = Mutex<PastState?>(nil)

    init(snapshots: SnapshotFiles?) {
        self.snapshots = snapshots
    }

    func state(asOf point: AsOf, backend: any StorageBackend) throws(ChordStoreError) -> PastState {
        try backend.withSnapshot { snapshot in
            let head = try snapshot.head.sequence
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
            if let cached = cache.withLock({ $0 }), cached.sequence == target { return cached }
            var start = (sequence: UInt64(0), state: InMemoryState(indexingChords: false))
            if let loaded = snapshots?.load(atMost: target) { start = loaded }
            if let cached = cache.withLock({ $0 }), cached.sequence <= target, cached.sequence > start.sequence {
                start = (cached.sequence, cached.state)
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
            cache.withLock { $0 = past }
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
                timestamp = try RecordCodec.decode(record, sequence: sequence).timestamp
                return false
            }
            guard let timestamp else { throw ChordStoreError(.dataLoss, "event \(middle) is missing") }
            if timestamp <= instant { low = middle } else { high = middle }
        }
        return low
    }
}
