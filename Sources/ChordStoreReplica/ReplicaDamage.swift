/// Something opening or syncing a replica found damaged on the device, and what it did
/// (docs/DEVICES.md, "Damage on the device").
public struct ReplicaDamage: Sendable, Hashable {
    /// What was found and done.
    public enum Kind: Sendable, Hashable {
        /// The copy of the store's events did not match its checksums (or could not be
        /// read): it was dropped, and the next sync copies it again.
        case copyDropped
        /// A queued write did not match its checksum but still reads: it was taken out of
        /// the queue as a rejected write (`DATA_LOSS`, `DAMAGED_ON_DEVICE`), never sent.
        case writeTakenAside
        /// A queued write too damaged to read: kept as it was in the queue file's
        /// `unreadable` table, never sent.
        case writeUnreadable
        /// A damaged queued write the server had already recorded: it left the queue, and
        /// the server's copy comes with the next sync.
        case writeAlreadyRecorded
        /// A value of the replica's description that can be worked out again (the
        /// installation, the next queue key) was damaged and was made again; a damaged
        /// installation starts a new device session.
        case descriptionRemade
        /// The LMDB files of format 1 were found beside a replica of format 2 that was
        /// not moved from them (an older version used the directory again): they were
        /// renamed `format1-left-data.mdb`, not read.
        case format1LeftAside
    }

    /// What was found and done.
    public var kind: Kind
    /// The same, for people.
    public var message: String

    /// Creates a report.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
}
