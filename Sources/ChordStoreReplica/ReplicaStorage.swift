import ChordStoreDomain
import ChordStoreEngine
import Foundation
import LMDB

/// A replica's directory: one LMDB environment with four databases.
///
/// - `meta`: the format number, the store's name (and id once known), the device's
///   session, the installation it belongs to (``Installation``), the last store sequence
///   folded (`head`) and the next queue key;
/// - `log`: the store's events as the change feed sent them (the server's records,
///   byte for byte), by sequence: the confirmed store is their fold;
/// - `pending`: the queue of writes made on the device (`chordstore.v1.PendingWrite`);
/// - `rejected`: the last ``maxRejected`` writes the server refused.
///
/// Commits skip the fsync (`MDB_NOSYNC`, keeping LMDB's ordering, so a crash of the
/// machine can lose the last commits but never damages the files): a write survives the
/// app being killed as soon as it returns, and a power loss once ``flush()`` ran (after
/// every sync, on close, or after every write with ``Replica/Options/flushEveryWrite``).
final class ReplicaStorage: @unchecked Sendable {
    /// The format this version writes. Formats are listed in docs/DEVICES.md; each has a
    /// golden fixture under Tests/Fixtures.
    static let format: UInt32 = 1
    /// Rejected writes kept for the app; older ones are dropped.
    static let maxRejected = 1_000

    /// The stored head (the last event copied).
    func storedHead() throws(ReplicaError) -> UInt64 {
        try readMeta()?.head ?? 0
    }

    /// What `meta` holds.
    struct Meta: Sendable, Hashable {
        var format: UInt32 = ReplicaStorage.format
        var store: String
        var storeID: UInt32?
        var session: String
        /// The data file's number when the session was given (`nil`: a directory written
        /// before installations were told apart, or a file system without inodes).
        var installation: Installation?
        var head: UInt64 = 0
        var nextKey: UInt64 = 1
    }

    private let environment: Environment
    private let lock: DirectoryLock
    private let meta: Database
    private let log: Database
    private let pending: Database
    private let rejected: Database
    let flushEveryWrite: Bool

    private init(environment: Environment, lock: DirectoryLock, flushEveryWrite: Bool) throws {
        self.environment = environment
        self.lock = lock
        self.flushEveryWrite = flushEveryWrite
        meta = try environment.openDatabase("meta")
        log = try environment.openDatabase("log")
        pending = try environment.openDatabase("pending")
        rejected = try environment.openDatabase("rejected")
    }

    /// Opens (creating it if `store` is given and the directory is new) the replica in
    /// `directory`.
    static func open(
        _ directory: URL, store: String?, newSession: () -> String, mapSize: Int, flushEveryWrite: Bool
    ) throws(ReplicaError) -> (ReplicaStorage, Meta, existed: Bool) {
        let existed = FileManager.default.fileExists(atPath: directory.appendingPathComponent("data.mdb").path)
        if !existed {
            guard store != nil else {
                throw ReplicaError(.noReplica, "\(directory.path) holds no replica; name the store to create one")
            }
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw ReplicaError(.storage, "cannot create \(directory.path): \(error.localizedDescription)")
            }
        }
        let lock: DirectoryLock
        do {
            lock = try DirectoryLock(directory: directory, inUse: { owner in
                "replica directory \(directory.path) is in use by another process\(owner.map { " (pid \($0))" } ?? "")"
            })
        } catch {
            throw ReplicaError(error.code == .unavailable ? .inUse : .storage, error.message)
        }
        let storage: ReplicaStorage
        do {
            var options = Environment.Options()
            options.mapSize = mapSize
            options.noSync = true
            options.maxDatabases = 8
            storage = try ReplicaStorage(
                environment: try Environment(directory: directory, options: options), lock: lock, flushEveryWrite: flushEveryWrite)
        } catch {
            throw ReplicaError(.storage, "cannot open the replica in \(directory.path): \(error)")
        }
        let found: Meta?
        do {
            found = try storage.readMeta()
        } catch {
            storage.close()
            throw error
        }
        if var found {
            if let store, store != found.store {
                storage.close()
                throw ReplicaError(.wrongStore, "\(directory.path) is a replica of store \(found.store), not \(store)")
            }
            // A copied or restored directory is another installation: it starts a session
            // of its own, so its undo never reverts the original device's changes.
            let here = Installation(of: directory)
            if let here, found.installation != here {
                if found.installation != nil { found.session = newSession() }
                found.installation = here
                do {
                    try storage.write { txn in try storage.putMeta(found, txn) }
                } catch {
                    storage.close()
                    throw error
                }
            }
            return (storage, found, true)
        }
        guard let store else {
            storage.close()
            throw ReplicaError(.noReplica, "\(directory.path) holds no replica; name the store to create one")
        }
        var fresh = Meta(store: store, session: newSession())
        fresh.installation = Installation(of: directory)
        do {
            try storage.write { txn in try storage.putMeta(fresh, txn) }
        } catch {
            storage.close()
            throw error
        }
        return (storage, fresh, false)
    }

    /// Releases the files and the directory lock, flushing first.
    func close() {
        try? environment.sync()
        environment.close()
        lock.release()
    }

    /// Flushes every commit to disk.
    func flush() throws(ReplicaError) {
        do {
            try environment.sync()
        } catch {
            throw ReplicaError(.storage, "cannot flush the replica: \(error)")
        }
    }

    // MARK: Reading

    private func readMeta() throws(ReplicaError) -> Meta? {
        do {
            return try environment.withReadTransaction { txn -> Meta? in
                guard let format = try txn.get(meta, key: Array("format".utf8)).map(Self.number) else { return nil }
                var result = Meta(
                    format: UInt32(clamping: format), store: try string(txn, "store"), storeID: nil, session: try string(txn, "session"))
                result.storeID = try txn.get(meta, key: Array("store_id".utf8)).map { UInt32(clamping: Self.number($0)) }
                result.installation = try txn.get(meta, key: Array("installation".utf8)).flatMap { Installation(String(decoding: $0, as: UTF8.self)) }
                result.head = try txn.get(meta, key: Array("head".utf8)).map(Self.number) ?? 0
                result.nextKey = try txn.get(meta, key: Array("next_key".utf8)).map(Self.number) ?? 1
                return result
            }
        } catch let error as ReplicaError {
            throw error
        } catch {
            throw ReplicaError(.storage, "cannot read the replica's description: \(error)")
        }
    }

    private func string(_ txn: Transaction, _ key: String) throws -> String {
        guard let bytes = try txn.get(meta, key: Array(key.utf8)) else {
            throw ReplicaError(.damaged, "the replica's description has no \(key)")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Calls `body` with each stored event, in order, up to `head`.
    func forEachEvent(through head: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Void) throws {
        try environment.withReadTransaction { txn in
            try txn.withCursor(log) { cursor in
                var entry = try cursor.first()
                while let (key, value) = entry {
                    let sequence = Self.number(key)
                    guard sequence <= head else { return }
                    try body(sequence, value)
                    entry = try cursor.next()
                }
            }
        }
    }

    /// The stored record of event `sequence`, as the feed sent it.
    func record(at sequence: UInt64) throws(ReplicaError) -> [UInt8]? {
        do {
            return try environment.withReadTransaction { txn in try txn.get(log, key: Self.key(sequence)).map { Array($0) } }
        } catch {
            throw ReplicaError(.storage, "cannot read event \(sequence) of the replica: \(error)")
        }
    }

    /// The queue, in order.
    func pendingWrites() throws(ReplicaError) -> [PendingWrite] {
        do {
            return try environment.withReadTransaction { txn in
                try txn.withCursor(pending) { cursor in
                    var writes: [PendingWrite] = []
                    var entry = try cursor.first()
                    while let (key, value) = entry {
                        writes.append(try PendingWriteCodec.decode(value, key: Self.number(key)))
                        entry = try cursor.next()
                    }
                    return writes
                }
            }
        } catch let error as ReplicaError {
            throw error
        } catch {
            throw ReplicaError(.storage, "cannot read the pending writes: \(error)")
        }
    }

    /// The last `limit` rejected writes, oldest first.
    func rejectedWrites(limit: Int) throws(ReplicaError) -> [RejectedWrite] {
        do {
            return try environment.withReadTransaction { txn in
                try txn.withCursor(rejected) { cursor in
                    var found: [RejectedWrite] = []
                    var entry = try cursor.last()
                    while let (key, value) = entry, found.count < limit {
                        found.append(try PendingWriteCodec.decodeRejected(value, key: Self.number(key)))
                        entry = try cursor.previous()
                    }
                    return found.reversed()
                }
            }
        } catch let error as ReplicaError {
            throw error
        } catch {
            throw ReplicaError(.storage, "cannot read the rejected writes: \(error)")
        }
    }

    // MARK: Writing

    /// Queues a write (and advances the next key past it).
    func append(_ write: PendingWrite, session: String) throws(ReplicaError) {
        try self.write { txn in
            try txn.put(pending, key: Self.key(write.key), value: PendingWriteCodec.encode(write, session: session))
            try txn.put(meta, key: Array("next_key".utf8), value: Self.key(write.key + 1))
        }
        if flushEveryWrite { try flush() }
    }

    /// Records the server's answer to a queued write.
    func update(_ write: PendingWrite, session: String) throws(ReplicaError) {
        try self.write { txn in
            try txn.put(pending, key: Self.key(write.key), value: PendingWriteCodec.encode(write, session: session))
        }
    }

    /// Stores events of the feed (raw records, the next ones after the stored head) and
    /// removes the queued writes they confirm, in one commit.
    func appendEvents(_ records: [(sequence: UInt64, bytes: [UInt8])], confirming done: [PendingWrite]) throws(ReplicaError) {
        guard let last = records.last else { return }
        try write { txn in
            for record in records {
                try txn.put(log, key: Self.key(record.sequence), value: record.bytes, flags: .append)
            }
            for write in done { try txn.delete(pending, key: Self.key(write.key)) }
            try txn.put(meta, key: Array("head".utf8), value: Self.key(last.sequence))
        }
    }

    /// Records the store's id on the server.
    func setStoreID(_ id: UInt32) throws(ReplicaError) {
        try write { txn in try txn.put(meta, key: Array("store_id".utf8), value: Self.key(UInt64(id))) }
    }

    /// Moves a refused write from the queue to the rejected writes.
    func reject(_ rejection: RejectedWrite, session: String) throws(ReplicaError) {
        try write { txn in
            try txn.delete(pending, key: Self.key(rejection.write.key))
            try txn.put(rejected, key: Self.key(rejection.write.key), value: PendingWriteCodec.encode(rejection, session: session))
            let stat = try txn.stat(rejected)
            if stat.entries > Self.maxRejected {
                try txn.withCursor(rejected) { cursor in
                    if let (key, _) = try cursor.first() { try txn.delete(rejected, key: Array(key)) }
                }
            }
        }
    }

    /// Forgets the copied events (keeping the queue and the rejected writes): the next
    /// sync copies the store again from its first event.
    func dropEvents(format: UInt32) throws(ReplicaError) {
        try write { txn in
            try txn.empty(log)
            try txn.put(meta, key: Array("head".utf8), value: Self.key(0))
            try txn.delete(meta, key: Array("store_id".utf8))
            try txn.put(meta, key: Array("format".utf8), value: Self.key(UInt64(format)))
        }
        try flush()
    }

    private func putMeta(_ value: Meta, _ txn: Transaction) throws {
        try txn.put(meta, key: Array("format".utf8), value: Self.key(UInt64(value.format)))
        try txn.put(meta, key: Array("store".utf8), value: Array(value.store.utf8))
        try txn.put(meta, key: Array("session".utf8), value: Array(value.session.utf8))
        if let installation = value.installation {
            try txn.put(meta, key: Array("installation".utf8), value: Array(installation.description.utf8))
        }
        try txn.put(meta, key: Array("head".utf8), value: Self.key(value.head))
        try txn.put(meta, key: Array("next_key".utf8), value: Self.key(value.nextKey))
    }

    /// Runs `body` in a write transaction, growing the map (doubling) when it is full.
    private func write(_ body: (Transaction) throws -> Void) throws(ReplicaError) {
        for _ in 0..<8 {
            do {
                try environment.withWriteTransaction(body)
                return
            } catch let error as LMDBError where error.isMapFull {
                do {
                    try environment.grow(by: environment.mapSize)
                } catch {
                    throw ReplicaError(.storage, "the replica's map is full and cannot grow: \(error)")
                }
            } catch let error as ReplicaError {
                throw error
            } catch {
                throw ReplicaError(.storage, "cannot write the replica: \(error)")
            }
        }
        throw ReplicaError(.storage, "the replica's map is full")
    }

    static func key(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }

    static func number(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        guard bytes.count == 8 else { return 0 }
        return bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }
}
