import ChordStoreDomain
import ChordStoreRecords
import Foundation
import GRDB
import Synchronization

/// A replica's directory (format 2): two SQLite databases, so that what only the device
/// holds never shares a file with what the server can send again.
///
/// - `queue.sqlite`: `meta` (the format, the store's name, the device's session, the
///   installation it belongs to, ``Installation``, and the next queue key), `pending`
///   (the writes made on the device, `chordstore.v1.PendingWrite`), `rejected` (the last
///   ``maxRejected`` writes the server refused, and writes found damaged on the device)
///   and `unreadable` (queued writes too damaged to read, kept as they were);
/// - `events.sqlite`: `meta` (the last store sequence copied, `head`, and the store's
///   id) and `events` (the store's events as the change feed sent them, the server's
///   records byte for byte, by sequence: the confirmed store is their fold);
/// - `view.checkpoint`: the confirmed store saved as far as some copied event
///   (``ViewCheckpoint``), so that opening folds only the events after it.
///
/// Every row carries a checksum of its bytes seeded with its key (XXH64): a byte changed
/// on the device's disk is found when the row is read. An event also keeps the chain seed
/// the feed sent with it (`chain_seed`, NULL from a server older than it), so that its
/// own checksum is checked as the server checks it, whenever the copy is read. A damaged event, or an events
/// file SQLite cannot read, drops the copy of the events (the next sync copies them
/// again); a damaged queued write is taken aside, never sent. The queue's file is small
/// and written only by the device's own writes.
///
/// Both databases are in WAL mode with `synchronous = NORMAL` (a crash of the machine can
/// lose the last commits but never damages the files): a write survives the app being
/// killed as soon as it returns, and a power loss once ``flush()`` ran (after every sync,
/// on close, or after every write with ``Replica/Options/flushEveryWrite``, which sets
/// `synchronous = FULL`). A format 1 directory (LMDB, ``ReplicaFormat1``) is moved to
/// format 2 when it is opened.
final class ReplicaStorage: @unchecked Sendable {
    /// The format this version writes. Formats are listed in docs/DEVICES.md; each has a
    /// golden fixture under Tests/Fixtures.
    static let format: UInt32 = 2
    /// Rejected writes kept for the app; older ones are dropped.
    static let maxRejected = 1_000
    static let queueFile = "queue.sqlite"
    static let eventsFile = "events.sqlite"

    /// What the queue's `meta` holds, with the events' head.
    struct Meta: Sendable, Hashable {
        var format: UInt32 = ReplicaStorage.format
        var store: String
        var storeID: UInt32?
        var session: String
        /// The queue file's number when the session was given (`nil`: a directory written
        /// before installations were told apart, or a file system without inodes).
        var installation: Installation?
        var head: UInt64 = 0
        var nextKey: UInt64 = 1
    }

    /// What opening found damaged and did about it (the copy of the events dropped, a
    /// value of the description made again, format 1 files set aside).
    private(set) var damageFound: [ReplicaDamage] = []
    /// Why opening dropped the copy of the events (its file or its description damaged),
    /// or `nil`.
    private(set) var eventsDropped: String?

    /// Held by every use of the databases and by closing them.
    private let access = NSRecursiveLock()
    /// Called as a batch of copied events starts to be stored (tests stop a pull there,
    /// between its fold and its commit).
    let beforeStoringEvents = Mutex<(@Sendable () -> Void)?>(nil)
    private var closed = false
    let directory: URL
    /// The directory's lock; `nil` for a reader (``openForReading(_:)``).
    private let lock: DirectoryLock?
    private let queue: DatabaseQueue
    private var events: DatabaseQueue
    let flushEveryWrite: Bool
    /// Opened for reading beside the app's process: never written, never locked.
    var isReader: Bool { lock == nil }

    init(directory: URL, lock: DirectoryLock?, queue: DatabaseQueue, events: DatabaseQueue, flushEveryWrite: Bool) {
        self.directory = directory
        self.lock = lock
        self.queue = queue
        self.events = events
        self.flushEveryWrite = flushEveryWrite
    }

    /// Opens (creating it if `store` is given and the directory is new) the replica in
    /// `directory`, moving a format 1 directory to format 2 first.
    static func open(
        _ directory: URL, store: String?, newSession: () -> String, flushEveryWrite: Bool,
        format1Reader: ReplicaFormat1.Reader?
    ) throws(ReplicaError) -> (ReplicaStorage, Meta) {
        let fileManager = FileManager.default
        let queuePath = directory.appendingPathComponent(queueFile).path
        let format1 = fileManager.fileExists(atPath: ReplicaFormat1.dataFile(in: directory).path)
        let existed = fileManager.fileExists(atPath: queuePath) || format1
        if !existed {
            guard store != nil else {
                throw ReplicaError(.noReplica, "\(directory.path) holds no replica; name the store to create one")
            }
            do {
                try fileManager.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
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
        do throws(ReplicaError) {
            let leftovers = format1 && fileManager.fileExists(atPath: queuePath)
            if format1 && !leftovers {
                guard let format1Reader else {
                    throw ReplicaError(
                        .formatNeedsMove,
                        "\(directory.path) holds a replica of format 1 (LMDB), which this build cannot read: "
                            + "open it once with chordstore replica, or with Replica.Options.movingFormat1 (module ChordStoreReplicaFormat1), to move it to format \(format)")
                }
                try move(format1: try format1Reader(directory), in: directory, newSession: newSession)
            }
            let opened = try open(directory, lock: lock, store: store, newSession: newSession, flushEveryWrite: flushEveryWrite)
            if leftovers {
                do {
                    try opened.0.settleFormat1Leftovers()
                } catch {
                    opened.0.closeDatabases()
                    throw error
                }
            }
            return opened
        } catch {
            lock.release()
            throw error
        }
    }

    private static func open(
        _ directory: URL, lock: DirectoryLock, store: String?, newSession: () -> String, flushEveryWrite: Bool
    ) throws(ReplicaError) -> (ReplicaStorage, Meta) {
        let queuePath = directory.appendingPathComponent(queueFile)
        let queue = try database(queuePath, migrations: queueMigrations, flushEveryWrite: flushEveryWrite, what: "the replica's queue")
        var dropped: String?
        let events: DatabaseQueue
        do {
            events = try openEvents(directory, flushEveryWrite: flushEveryWrite)
        } catch where error.code == .damaged {
            // What the server sent can be copied again (a damaged page or schema); the
            // queue is in its own file. (A file that cannot be opened for now, as iOS's
            // file protection while the device is locked, is `storage`, not dropped.)
            dropped = "the copy of the store's events cannot be opened (\(error.message)); it is copied again"
            removeEventsFiles(directory)
            events = try openEvents(directory, flushEveryWrite: flushEveryWrite)
        }
        let storage = ReplicaStorage(directory: directory, lock: lock, queue: queue, events: events, flushEveryWrite: flushEveryWrite)
        storage.eventsDropped = dropped
        storage.damageFound = dropped.map { [ReplicaDamage(.copyDropped, $0)] } ?? []
        do throws(ReplicaError) {
            if var found = try storage.readMeta(newSession: newSession) {
                // A newer format is refused before anything is written.
                if found.format > format {
                    throw ReplicaError(
                        .formatTooNew,
                        "\(directory.path) was written by a newer ChordStore (replica format \(found.format); this version reads up to \(format))")
                }
                if let store, store != found.store {
                    throw ReplicaError(.wrongStore, "\(directory.path) is a replica of store \(found.store), not \(store)")
                }
                // A copied or restored directory is another installation: it starts a
                // session of its own, so its undo never reverts the original device's changes.
                let here = Installation(of: queuePath)
                if let here, found.installation != here {
                    if found.installation != nil { found.session = newSession() }
                    found.installation = here
                    try storage.writeQueue { db in try putMeta(db, found) }
                }
                return (storage, found)
            }
            guard let store else {
                throw ReplicaError(.noReplica, "\(directory.path) holds no replica; name the store to create one")
            }
            var fresh = Meta(store: store, session: newSession())
            fresh.installation = Installation(of: queuePath)
            try storage.writeQueue { db in try putMeta(db, fresh) }
            return (storage, fresh)
        } catch {
            storage.closeDatabases()
            throw error
        }
    }

    /// Releases the files and the directory lock, flushing first.
    func close() {
        closeDatabases()
        lock?.release()
    }

    private func closeDatabases() {
        if !isReader { try? flush() }
        access.withLock {
            closed = true
            try? queue.close()
            try? events.close()
        }
    }

    /// Flushes every commit to disk (a full checkpoint of each write-ahead log, synced).
    func flush() throws(ReplicaError) {
        try run(what: "flush the replica's queue") { _ = try queue.writeWithoutTransaction { db in try db.checkpoint(.full) } }
        try run(what: "flush the replica's copy of the events") { _ = try events.writeWithoutTransaction { db in try db.checkpoint(.full) } }
    }

    // MARK: Reading

    /// The stored head (the last event copied).
    func storedHead() throws(ReplicaError) -> UInt64 {
        try readEvents { db in try Self.number(db, "head", in: "events") ?? 0 }
    }

    /// The description, with what can be worked out again made again when damaged (a
    /// damaged installation starts a new session; a damaged next key follows the keys in
    /// use). A damaged format, store or session is `damaged`: nothing tells them.
    func readMeta(newSession: () -> String) throws(ReplicaError) -> Meta? {
        var remade: [String] = []
        var found = try readQueue { db -> Meta? in
            guard let format = try Self.number(db, "format", in: "queue") else { return nil }
            func text(_ name: String) throws -> String {
                guard let bytes = try Self.value(db, name, in: "queue") else {
                    throw ReplicaError(.damaged, "the replica's description has no \(name)")
                }
                return String(decoding: bytes, as: UTF8.self)
            }
            var meta = Meta(format: UInt32(clamping: format), store: try text("store"), session: try text("session"))
            do {
                meta.installation = try Self.value(db, "installation", in: "queue").flatMap { Installation(String(decoding: $0, as: UTF8.self)) }
            } catch {
                meta.session = newSession()
                remade.append("installation (a new device session was started)")
            }
            do {
                meta.storeID = try Self.number(db, "store_id", in: "queue").map { UInt32(clamping: $0) }
            } catch {
                remade.append("store id (read again from the server at the next sync)")
            }
            do {
                meta.nextKey = try Self.number(db, "next_key", in: "queue") ?? 1
            } catch {
                let largest = try Int64.fetchOne(
                    db, sql: "SELECT MAX(key) FROM (SELECT key FROM pending UNION ALL SELECT key FROM rejected UNION ALL SELECT key FROM unreadable)")
                meta.nextKey = UInt64(clamping: largest ?? 0) + 1
                remade.append("next queue key")
            }
            return meta
        }
        guard var meta = found else { return nil }
        if !remade.isEmpty, isReader {
            throw ReplicaError(.damaged, "the replica's \(remade[0]) is damaged (the app's next open makes it again)")
        }
        if !remade.isEmpty {
            for value in remade { damageFound.append(ReplicaDamage(.descriptionRemade, "the replica's \(value) was damaged and was made again")) }
            try writeQueue { db in try Self.putMeta(db, meta) }
        }
        do {
            meta.head = try readEvents { db in try Self.number(db, "head", in: "events") ?? 0 }
        } catch {
            if isReader { throw error }
            let reason = "the copy of the store's events has a damaged description (\(error.message)); it is copied again"
            eventsDropped = reason
            damageFound.append(ReplicaDamage(.copyDropped, reason))
            try dropEvents()
            meta.head = 0
        }
        found = meta
        return found
    }

    /// Records a finding of opening.
    func note(_ damage: ReplicaDamage) { damageFound.append(damage) }

    static func putMeta(_ db: Database, _ value: Meta) throws {
        try put(db, "format", bytes(UInt64(value.format)))
        try put(db, "store", Array(value.store.utf8))
        try put(db, "session", Array(value.session.utf8))
        if let installation = value.installation { try put(db, "installation", Array(installation.description.utf8)) }
        if let storeID = value.storeID { try put(db, "store_id", bytes(UInt64(storeID))) }
        try put(db, "next_key", bytes(value.nextKey))
    }

    /// Calls `body` with each stored event, in order, after `first` (0: from the first)
    /// up to `head`, after checking its row's checksum and, where the feed sent its chain
    /// seed, its own checksum as the server checks it (a damaged one throws
    /// ``ReplicaError/Code/damaged``).
    func forEachEvent(after first: UInt64 = 0, through head: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Void) throws {
        try readEvents { db in
            let rows = try Row.fetchCursor(
                db, sql: "SELECT sequence, record, checksum, chain_seed FROM events WHERE sequence > ? AND sequence <= ? ORDER BY sequence",
                arguments: [Int64(clamping: first), Int64(clamping: head)])
            while let row = try rows.next() {
                // Read in place (no copy of the record): the row's checksum, then the chain.
                // (Integers through the statement's own columns: GRDB's generic decoding of
                // an optional costs about a microsecond a value.)
                guard !row.hasNull(atIndex: 0), !row.hasNull(atIndex: 2) else {
                    throw ReplicaError(.damaged, "an event of the copy is damaged: it has no sequence or no checksum")
                }
                let sequence = UInt64(clamping: try row.decode(Int64.self, atIndex: 0))
                let checksum = try row.decode(Int64.self, atIndex: 2)
                let seed = row.hasNull(atIndex: 3) ? nil : UInt64(bitPattern: try row.decode(Int64.self, atIndex: 3))
                try row.withUnsafeData(atIndex: 1) { data in
                    guard let data else { throw ReplicaError(.damaged, "event \(sequence) of the copy is damaged: it has no record") }
                    try data.withUnsafeBytes { raw in
                        try Self.verify(raw, key: sequence, checksum: checksum, what: "event \(sequence) of the copy")
                        try Self.checkChain(raw, sequence: sequence, seed: seed)
                        try body(sequence, raw)
                    }
                }
            }
        }
    }

    /// The stored record of event `sequence`, as the feed sent it, checked as
    /// ``forEachEvent(through:_:)`` checks it.
    func record(at sequence: UInt64) throws(ReplicaError) -> [UInt8]? {
        try readEvents { db -> [UInt8]? in
            guard let row = try Row.fetchOne(
                db, sql: "SELECT sequence, record, checksum, chain_seed FROM events WHERE sequence = ?", arguments: [Int64(clamping: sequence)])
            else { return nil }
            let stored = try KeyedRow(row)
            guard let record = stored.bytes, stored.isIntact, stored.key == sequence else {
                throw ReplicaError(.damaged, "event \(sequence) of the copy is damaged: its checksum does not match")
            }
            let seed = (try? row.decode(Int64?.self, atIndex: 3)).flatMap { $0 }.map { UInt64(bitPattern: $0) }
            try record.withUnsafeBytes { raw in try Self.checkChain(raw, sequence: sequence, seed: seed) }
            return record
        }
    }

    private static func checkChain(_ record: UnsafeRawBufferPointer, sequence: UInt64, seed: UInt64?) throws(ReplicaError) {
        guard let seed else { return }
        do {
            _ = try RecordCodec.verify(record, sequence: sequence, previousChecksum: seed)
        } catch {
            throw ReplicaError(.damaged, "event \(sequence) of the copy does not match the log's checksum chain")
        }
    }

    /// The last `limit` rejected writes, oldest first (a row that no longer reads is
    /// left out).
    func rejectedWrites(limit: Int) throws(ReplicaError) -> [RejectedWrite] {
        try readQueue { db in
            var found: [RejectedWrite] = []
            let rows = try Row.fetchCursor(db, sql: "SELECT key, write, checksum FROM rejected ORDER BY key DESC LIMIT ?", arguments: [limit])
            while let row = try rows.next() {
                let stored = try KeyedRow(row)
                guard stored.isIntact, let bytes = stored.bytes, let rejection = try? PendingWriteCodec.decodeRejected(bytes, key: stored.key)
                else { continue }
                found.append(rejection)
            }
            return found.reversed()
        }
    }

    // MARK: Writing

    /// Queues a write (and advances the next key past it).
    func append(_ write: PendingWrite, session: String) throws(ReplicaError) {
        try append([write], session: session)
    }

    /// Queues writes in one transaction: all of them or none (and advances the next key
    /// past the last).
    func append(_ writes: [PendingWrite], session: String) throws(ReplicaError) {
        guard let last = writes.last else { return }
        try writeQueue { db in
            for write in writes { try Self.putPending(db, write, session: session) }
            try Self.put(db, "next_key", Self.bytes(last.key + 1))
        }
    }

    /// Records the server's answer to a queued write.
    func update(_ write: PendingWrite, session: String) throws(ReplicaError) {
        try writeQueue { db in try Self.putPending(db, write, session: session) }
    }

    /// Stores events of the feed (raw records, the next ones after the stored head), then
    /// removes the queued writes they confirm. The two files commit one after the other:
    /// should the app stop between them, opening finds the writes in the copied events
    /// and removes them then (``removeConfirmed(commandIDs:)``).
    func appendEvents(_ records: [CopiedEvent], confirming done: [PendingWrite]) throws(ReplicaError) {
        guard let last = records.last else { return }
        beforeStoringEvents.withLock { $0 }?()
        try writeEvents { db in
            let insert = try db.cachedStatement(sql: "INSERT INTO events (sequence, record, checksum, chain_seed) VALUES (?, ?, ?, ?)")
            for record in records {
                try insert.execute(arguments: [
                    Int64(clamping: record.sequence), Data(record.bytes), Self.checksum(record.bytes, key: record.sequence),
                    record.seed.map { Int64(bitPattern: $0) },
                ])
            }
            try Self.put(db, "head", Self.bytes(last.sequence))
        }
        guard !done.isEmpty else { return }
        try writeQueue { db in
            for write in done { try db.cachedStatement(sql: "DELETE FROM pending WHERE key = ?").execute(arguments: [Int64(clamping: write.key)]) }
        }
    }

    /// Removes the queued writes with these keys (found among the copied events when the
    /// replica opened).
    func removeConfirmed(keys: [UInt64]) throws(ReplicaError) {
        guard !keys.isEmpty else { return }
        try writeQueue { db in
            for key in keys { try db.cachedStatement(sql: "DELETE FROM pending WHERE key = ?").execute(arguments: [Int64(clamping: key)]) }
        }
    }

    /// Records the store's id on the server (in the queue's file: it binds the queue to
    /// its store, and outlives a copy of the events dropped).
    func setStoreID(_ id: UInt32) throws(ReplicaError) {
        try writeQueue { db in try Self.put(db, "store_id", Self.bytes(UInt64(id))) }
    }

    /// Moves a refused write from the queue to the rejected writes.
    func reject(_ rejection: RejectedWrite, session: String) throws(ReplicaError) {
        try writeQueue { db in
            try db.execute(sql: "DELETE FROM pending WHERE key = ?", arguments: [Int64(clamping: rejection.write.key)])
            try Self.putRejected(db, rejection, session: session)
        }
    }

    /// Forgets the copied events (keeping the queue and the rejected writes): the next
    /// sync copies the store again from its first event. Called when the copy was found
    /// damaged, so its file is removed and made again (a damaged page or schema would
    /// outlive a `DELETE`).
    func dropEvents() throws(ReplicaError) {
        access.lock()
        defer { access.unlock() }
        guard !closed else { throw ReplicaError(.storage, "cannot drop the replica's copy of the events: the replica is closed") }
        try? events.close()
        Self.removeEventsFiles(directory)
        events = try Self.openEvents(directory, flushEveryWrite: flushEveryWrite)
    }

    /// Opens the copy of the events again, for reading: a reader's refresh (the app may
    /// have dropped the file and made it again since).
    func reopenEventsForReading() throws(ReplicaError) {
        access.lock()
        defer { access.unlock() }
        guard !closed else { throw ReplicaError(.storage, "cannot read the replica's copy of the events: the replica is closed") }
        let reopened = try Self.readerDatabase(
            directory.appendingPathComponent(Self.eventsFile), migrations: Self.eventsMigrations, what: "the replica's copy of the events",
            derived: true)
        try? events.close()
        events = reopened
    }

    // MARK: Files

    /// Opens (creating) one of the two databases, migrated to this version's tables; a
    /// database written by a newer version (a migration this one does not know) is refused
    /// (`formatTooNew`), or, when `derived` (the copy of the events, which can be copied
    /// again, and whose list of migrations a flipped bit can change), is `damaged`.
    static func database(
        _ file: URL, migrations: DatabaseMigrator, flushEveryWrite: Bool, what: String, derived: Bool = false
    ) throws(ReplicaError) -> DatabaseQueue {
        var configuration = Configuration()
        configuration.journalMode = .wal
        // A reader in another process (an app extension) may hold a snapshot for a moment:
        // a write or a full checkpoint waits for it rather than fail.
        configuration.busyMode = .timeout(2)
        configuration.prepareDatabase { db in
            try db.execute(sql: flushEveryWrite ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
        }
        let database: DatabaseQueue
        do {
            let created = !FileManager.default.fileExists(atPath: file.path)
            database = try DatabaseQueue(path: file.path, configuration: configuration)
            if created { try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path) }
            if try database.read(migrations.hasBeenSuperseded) {
                if derived {
                    throw ReplicaError(.damaged, "\(what) names tables this version does not know (written by a newer ChordStore, or damaged)")
                }
                throw ReplicaError(.formatTooNew, "\(file.path) was written by a newer ChordStore (\(what) has tables this version does not know)")
            }
            try migrations.migrate(database)
        } catch let error as ReplicaError {
            throw error
        } catch let error as DatabaseError where isDamage(error) {
            throw ReplicaError(.damaged, "cannot open \(what) (\(file.lastPathComponent)): \(error)")
        } catch {
            throw ReplicaError(.storage, "cannot open \(what) (\(file.lastPathComponent)): \(error)")
        }
        return database
    }

    /// Opens (creating) `events.sqlite` in `directory`.
    static func openEvents(_ directory: URL, flushEveryWrite: Bool) throws(ReplicaError) -> DatabaseQueue {
        try database(
            directory.appendingPathComponent(eventsFile), migrations: eventsMigrations, flushEveryWrite: flushEveryWrite,
            what: "the replica's copy of the events", derived: true)
    }

    /// Removes the copy of the events and the view saved from it (``ViewCheckpoint``).
    static func removeEventsFiles(_ directory: URL) {
        ViewCheckpoint.remove(in: directory)
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(eventsFile + suffix))
        }
    }

    // MARK: Transactions

    func readQueue<T>(_ body: (Database) throws -> T) throws(ReplicaError) -> T {
        try run(what: "read the replica's queue") { try queue.read(body) }
    }

    func readEvents<T>(_ body: (Database) throws -> T) throws(ReplicaError) -> T {
        try run(what: "read the replica's copy of the events", inCopy: true) { try events.read(body) }
    }

    func writeQueue(_ body: (Database) throws -> Void) throws(ReplicaError) {
        try run(what: "write the replica's queue") { try queue.write(body) }
    }

    private func writeEvents(_ body: (Database) throws -> Void) throws(ReplicaError) {
        try run(what: "write the replica's copy of the events", inCopy: true) { try events.write(body) }
    }

    /// Runs `body` unless the storage was closed: a sync still running when the app
    /// closes the replica gets an error, never a closed connection (SQLite would crash).
    private func run<T>(what: String, inCopy: Bool = false, _ body: () throws -> T) throws(ReplicaError) -> T {
        access.lock()
        defer { access.unlock() }
        guard !closed else { throw ReplicaError(.storage, "cannot \(what): the replica is closed") }
        var failure: ReplicaError
        do {
            return try body()
        } catch let error as ReplicaError {
            failure = error
        } catch let error as DatabaseError where Self.isDamage(error) {
            failure = ReplicaError(.damaged, "cannot \(what): the file is damaged (\(error.message ?? "\(error)"))")
        } catch let error as RowDecodingError {
            failure = ReplicaError(.damaged, "cannot \(what): a row is damaged (\(error))")
        } catch {
            failure = ReplicaError(.storage, "cannot \(what): \(error)")
        }
        failure.inCopy = inCopy && failure.code == .damaged
        throw failure
    }

    /// Whether SQLite's error says the file is damaged: a damaged page (`CORRUPT`), a
    /// header that is not SQLite's (`NOTADB`), or a schema changed under its tables (an
    /// `ERROR` such as "no such column" on this version's own tables).
    static func isDamage(_ error: DatabaseError) -> Bool {
        error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB || error.resultCode == .SQLITE_ERROR
    }
}
