public import Foundation

/// An immutable fact in the log. Events carry what is needed to invert them (previous
/// values, the deleted chordset), so undo never needs a replay.
public enum Event: Sendable, Hashable {
    /// A chordset was inserted at `chordset.index` (the end of the order, for an add).
    case chordsetAdded(Chordset)
    /// A chordset's title changed.
    case chordsetRenamed(id: UUID, title: String, previousTitle: String)
    /// A chordset and its chords were deleted; the payload is the chordset as it was.
    case chordsetDeleted(Chordset)
    /// A chord's colour changed; `chordsetID` is `nil` for the controls chord.
    case chordColorSet(chordID: UUID, chordsetID: UUID?, color: ChordColor, previous: ChordColor)
    /// A chord's tempo changed; `chordsetID` is `nil` for the controls chord.
    case chordBPMSet(chordID: UUID, chordsetID: UUID?, bpm: Double, previous: Double)
    /// The controls chord was created or replaced, or (`nil`, the undo of its creation)
    /// cleared.
    case controlsChordSet(Chord?, previous: Chord?)
    /// A chordset moved in the user order.
    case chordsetMoved(id: UUID, from: Int, to: Int)
    /// Every chordset was deleted; `count` says how many there were. The state keeps the
    /// deleted chordsets under the event's sequence number for ``allRestored(deletedAt:count:)``.
    case allDeleted(count: Int)
    /// The chordsets removed by the ``allDeleted(count:)`` event `deletedAt` were put back
    /// with their ids, chords and indexes (the undo of a delete-all).
    case allRestored(deletedAt: UInt64, count: Int)
    /// A store was created or deleted: an event of the whole server, in no store's
    /// sequence (the engine's registry of stores folds it; ``Fold`` ignores it).
    case store(StoreEvent)
    /// A token was created or revoked: an event of the whole server, in no store.
    case token(TokenEvent)

    /// A short kind name, matching the protobuf field name.
    public var kindName: String {
        switch self {
        case .chordsetAdded: "chordset_added"
        case .chordsetRenamed: "chordset_renamed"
        case .chordsetDeleted: "chordset_deleted"
        case .chordColorSet: "chord_color_set"
        case .chordBPMSet: "chord_bpm_set"
        case .controlsChordSet: "controls_chord_set"
        case .chordsetMoved: "chordset_moved"
        case .allDeleted: "all_deleted"
        case .allRestored: "all_restored"
        case .store(.created): "store_created"
        case .store(.deleted): "store_deleted"
        case .token(.created): "token_created"
        case .token(.revoked): "token_revoked"
        }
    }

    /// Every ``kindName`` of an event in a store (a feed filters on these; the store
    /// events are in no store).
    public static let kindNames: Set<String> = [
        "chordset_added", "chordset_renamed", "chordset_deleted", "chord_color_set", "chord_bpm_set",
        "controls_chord_set", "chordset_moved", "all_deleted", "all_restored",
    ]

    /// The chordset the event concerns, if any.
    public var chordsetID: UUID? {
        switch self {
        case .chordsetAdded(let c), .chordsetDeleted(let c): c.id
        case .chordsetRenamed(let id, _, _), .chordsetMoved(let id, _, _): id
        case .chordColorSet(_, let id, _, _), .chordBPMSet(_, let id, _, _): id
        case .controlsChordSet, .allDeleted, .allRestored, .store, .token: nil
        }
    }

    /// Whether the event belongs to the whole server (a store's or a token's creation or
    /// deletion) rather than to one store.
    public var isServerEvent: Bool {
        switch self {
        case .store, .token: true
        default: false
        }
    }

    /// Whether the event concerns the whole collection (delete-all and its undo).
    public var isCollectionWide: Bool {
        switch self {
        case .allDeleted, .allRestored: true
        default: false
        }
    }

    /// Calls `body` with each revision this event advances (see ``RevisionKey``), in turn:
    /// a chordset's event its chordset's and the collection's, a delete-all or its undo the
    /// collection's and delete-all's, any other the controls chord's. No array is made (a
    /// replay folds the changes of a million events: an array each was a `malloc` and a
    /// `free`).
    public func forEachRevisionKey<Failure: Error>(_ body: (RevisionKey) throws(Failure) -> Void) throws(Failure) {
        if isCollectionWide {
            try body(.collection)
            try body(.bulk)
        } else if let id = chordsetID {
            try body(.chordset(id))
            try body(.collection)
        } else {
            try body(.controls)
        }
    }

    /// The revisions that, if another session advanced them after this event, make
    /// undoing (or redoing) it a conflict.
    public var conflictKeys: [RevisionKey] {
        if isCollectionWide { return [.collection] }
        if let id = chordsetID { return [.chordset(id), .bulk] }
        return [.controls]
    }
}
