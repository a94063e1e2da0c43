public import ChordStoreDomain

/// Why a replica could not be opened or synced. Local writes are refused with the
/// server's own ``ChordStoreDomain/ChordStoreError`` codes instead.
public struct ReplicaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of failure an app tells apart.
    public enum Code: String, Sendable, Hashable {
        /// The server cannot be reached (or did not answer in time): the replica stays
        /// usable offline and syncs later.
        case offline
        /// The server refused the next queued write for now (a full disk, a limit of the
        /// store reached): it stays queued, with the ones after it; the others' changes
        /// were still copied. Syncing again later sends it.
        case writesHeld
        /// The store was deleted on the server. Pending writes stay on the device.
        case storeDeleted
        /// The server refused the replica's credentials: the token was revoked (or its
        /// store deleted), or it does not allow reading the store.
        case accessRevoked
        /// The store on the server is not the one this replica copied: it was deleted and
        /// created again under the same name, or the server lost events the replica holds.
        case storeReplaced
        /// The directory holds no replica (and no store was named to create one).
        case noReplica
        /// Another process has the replica directory open.
        case inUse
        /// The directory holds a replica of another store, or the client works on another.
        case wrongStore
        /// The directory was written by a newer version of ChordStore.
        case formatTooNew
        /// The directory is of format 1 (LMDB), which this build cannot read: open it once
        /// with ``Replica/Options/format1Reader`` set (module `ChordStoreReplicaFormat1`,
        /// Linux and macOS) or with `chordstore replica`, which move it to format 2.
        case formatNeedsMove
        /// The replica's files cannot be read or written.
        case storage
        /// A record of the replica is damaged.
        case damaged
        /// Another sync of this replica is running.
        case busy
        /// The server answered in a way the replica does not understand.
        case protocolError
        /// The replica was opened for reading (``Replica/openForReading(at:options:)``, an
        /// app extension's): it does not sync; the app does.
        case readOnly
    }

    /// What failed.
    public var code: Code
    /// A sentence for people.
    public var message: String
    /// Whether the failure is the copy of the store's events being damaged (which the
    /// replica drops and copies again), not the queue.
    var inCopy = false

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Whether syncing again later may succeed without anyone acting (the server was
    /// unreachable); the other failures need a person (a new token, a resync).
    public var isTransient: Bool { code == .offline || code == .busy || code == .writesHeld }

    public var description: String { "\(code.rawValue): \(message)" }
}

extension ReplicaError {
    /// The nearest status code (docs/PROTOCOL.md §3), for tools that report codes.
    public var statusCode: ChordStoreError.Code {
        switch code {
        case .offline, .inUse, .busy: .unavailable
        case .writesHeld: .resourceExhausted
        case .storeDeleted, .noReplica: .notFound
        case .accessRevoked: .unauthenticated
        case .storeReplaced, .formatTooNew, .formatNeedsMove, .readOnly: .failedPrecondition
        case .wrongStore: .invalidArgument
        case .storage, .protocolError: .internal
        case .damaged: .dataLoss
        }
    }
}
