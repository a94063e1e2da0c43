public import ChordStoreDomain

/// Where a replica's sync stands: what an app shows in its UI.
public enum SyncStatus: Sendable, Hashable, CustomStringConvertible {
    /// Not connected (never started, the server unreachable, or between retries): writes
    /// are kept and sent later. `reason` says why, for people.
    case offline(pending: Int, lastSequence: UInt64, reason: String)
    /// Connected and sending writes or copying events.
    case syncing(pending: Int, lastSequence: UInt64)
    /// Connected, nothing pending, and every event of the store up to `lastSequence` copied.
    case upToDate(lastSequence: UInt64)
    /// Syncing stopped for a reason only a person can fix (a revoked token, a deleted
    /// store); writes are still kept.
    case stopped(ReplicaError, pending: Int, lastSequence: UInt64)

    public var description: String {
        switch self {
        case .offline(let pending, let sequence, let reason): "offline (\(reason)): \(pending) pending, at sequence \(sequence)"
        case .syncing(let pending, let sequence): "syncing: \(pending) pending, at sequence \(sequence)"
        case .upToDate(let sequence): "up to date at sequence \(sequence)"
        case .stopped(let error, let pending, let sequence): "stopped (\(error)): \(pending) pending, at sequence \(sequence)"
        }
    }
}

/// What happened to the device's writes, as the sync learns it.
public enum ReplicaNotice: Sendable, Hashable {
    /// The server recorded the write at `sequence`.
    case confirmed(commandID: String, sequence: UInt64)
    /// The server refused the write; it was taken back from the view.
    case rejected(RejectedWrite)
    /// The replica dropped its copy of the store's events (an older or damaged format)
    /// and copies them again at the next sync; its pending writes are kept.
    case resyncing(reason: String)
}

/// One message of a live query on a replica: the result (first message) or the deltas
/// that turn the previous result into this one, after local writes or synced events.
public struct ReplicaQueryUpdate: Sendable, Hashable {
    /// Whether this is the first message, whose ``chordsets`` are the whole result.
    public var isInitial: Bool
    /// The result after this update.
    public var chordsets: [Chordset]
    /// What changed since the previous message (empty in the first), in the order to
    /// apply them (``ChordStoreDomain/ListDelta``).
    public var deltas: [ListDelta]
    /// The last store event the result includes (pending writes come on top).
    public var lastSequence: UInt64
    /// Writes of the device in the result that the server has not confirmed, when the
    /// result was made. A confirmation that leaves the result as it was sends no message:
    /// for the count now, read ``Replica/pendingWrites`` or follow
    /// ``Replica/statusUpdates()``.
    public var pending: Int
}
