import ChordStoreRecords
public import ChordStoreDomain
public import Foundation

/// The state as it was at one point of the log: what a read as of that point answers.
public struct PastState: Sendable {
    /// The last event applied (0: the empty store before the first event).
    public let sequence: UInt64
    let state: InMemoryState

    /// Chordsets in `order`, at most `limit` of them.
    public func chordsets(order: ChordsetOrder = .creationDate, limit: Int? = nil) -> [Chordset] {
        ChordsetSorting.chordsets(of: state, order: order, limit: limit)
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
