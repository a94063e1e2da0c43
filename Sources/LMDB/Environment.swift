public import Foundation
internal import CLMDB
import Synchronization

/// An LMDB environment: one memory-mapped data file holding named ``Database``s.
///
/// Transactions are closure-scoped: ``withReadTransaction(_:)`` and
/// ``withWriteTransaction(_:)``. The environment is opened with `MDB_NOTLS`, so read
/// transactions may run on any thread; a write transaction is bound to the thread that
/// began it, so never `await` inside one. Only one write transaction runs at a time.
public final class Environment: @unchecked Sendable {
    /// How to open an environment.
    public struct Options: Sendable {
        /// The initial map size in bytes; ``Environment/setMapSize(_:)`` grows it.
        public var mapSize = 256 << 20
        /// How many named databases may be opened.
        public var maxDatabases: UInt32 = 16
        /// How many read transactions may be open at once.
        public var maxReaders: UInt32 = 254
        /// Skip the fsync at commit (`MDB_NOSYNC`): a crash may lose the last commits.
        /// Only for bulk loads and benchmarks that say so.
        public var noSync = false
        /// Write through a writable memory map (`MDB_WRITEMAP`): a commit copies no pages
        /// and, with ``noSync``, makes no system call. The data file's blocks are reserved
        /// up to the map size (`posix_fallocate`) when it opens and grows: a full disk then
        /// fails the growth with `ENOSPC`, where a write to an unreserved page of the map
        /// would kill the process with `SIGBUS`. A stray write through a pointer into the
        /// map could damage the database, so only for data that can be rebuilt.
        public var writeMap = false

        /// The default options: 256 MiB map, durable commits.
        public init() {}
    }

    let handle: OpaquePointer
    private let writeMap: Bool
    private let resizeLock = ReadWriteLock()
    private let closed = Atomic(false)

    /// Whether ``close()`` was called.
    public var isClosed: Bool { closed.load(ordering: .acquiring) }
    /// The directory holding `data.mdb` and `lock.mdb`.
    public let directory: URL

    /// Opens (creating if needed) the environment in `directory`, which must exist, and
    /// clears reader slots left by dead processes.
    public init(directory: URL, options: Options = Options()) throws(LMDBError) {
        var env: OpaquePointer?
        try check(mdb_env_create(&env), "mdb_env_create")
        guard let env else { throw LMDBError(code: ENOMEM, operation: "mdb_env_create") }
        do {
            try check(mdb_env_set_maxdbs(env, MDB_dbi(options.maxDatabases)), "mdb_env_set_maxdbs")
            try check(mdb_env_set_maxreaders(env, options.maxReaders), "mdb_env_set_maxreaders")
            try check(mdb_env_set_mapsize(env, options.mapSize), "mdb_env_set_mapsize")
            var flags = UInt32(MDB_NOTLS)
            if options.noSync { flags |= UInt32(MDB_NOSYNC) }
            if options.writeMap { flags |= UInt32(MDB_WRITEMAP) }
            try check(mdb_env_open(env, directory.path, flags, 0o644), "mdb_env_open(\(directory.path))")
            var dead: Int32 = 0
            try check(mdb_reader_check(env, &dead), "mdb_reader_check")
        } catch {
            mdb_env_close(env)
            throw error
        }
        self.handle = env
        self.directory = directory
        self.writeMap = options.writeMap
        if writeMap {
            do {
                try reserveBlocks()
            } catch {
                mdb_env_close(env)
                throw error
            }
        }
    }

    deinit {
        close()
    }

    /// Closes the environment after the transactions in flight end. Later transactions fail
    /// with `EINVAL`. Calling it again does nothing.
    public func close() {
        resizeLock.withExclusive {
            if !isClosed { mdb_env_close(handle) }
            closed.store(true, ordering: .releasing)
        }
    }

    /// The current map size in bytes.
    public var mapSize: Int {
        resizeLock.withShared {
            var info = MDB_envinfo()
            if !isClosed { mdb_env_info(handle, &info) }
            return info.me_mapsize
        }
    }

    /// Grows (or shrinks) the map. Waits until no transaction is active in this process.
    public func setMapSize(_ size: Int) throws(LMDBError) {
        try resizeLock.withExclusive { () throws(LMDBError) in
            if isClosed { throw LMDBError(code: EINVAL, operation: "mdb_env_set_mapsize on a closed environment") }
            try check(mdb_env_set_mapsize(handle, size), "mdb_env_set_mapsize(\(size))")
            if writeMap { try reserveBlocks() }
        }
    }

    /// Reserves the data file's blocks up to the map size (see ``Options/writeMap``).
    private func reserveBlocks() throws(LMDBError) {
        var fd: mdb_filehandle_t = -1
        try check(mdb_env_get_fd(handle, &fd), "mdb_env_get_fd")
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        let rc = posix_fallocate(fd, 0, off_t(info.me_mapsize))
        if rc != 0 { throw LMDBError(code: rc, operation: "posix_fallocate(\(info.me_mapsize) bytes of \(directory.path)/data.mdb)") }
    }

    /// Flushes every commit to disk (`mdb_env_sync` with force): what an environment opened
    /// with ``Options/noSync`` needs before its files may be trusted after a power loss.
    public func sync() throws(LMDBError) {
        try resizeLock.withShared { () throws(LMDBError) in
            if isClosed { throw LMDBError(code: EINVAL, operation: "mdb_env_sync on a closed environment") }
            try check(mdb_env_sync(handle, 1), "mdb_env_sync")
        }
    }

    /// Runs `body` in a read-only snapshot. The transaction and every buffer it returned
    /// are invalid once `body` returns. Readers never block the writer.
    public func withReadTransaction<T>(_ body: (Transaction) throws -> T) throws -> T {
        try resizeLock.withShared {
            let txn = try begin(flags: UInt32(MDB_RDONLY))
            defer { mdb_txn_abort(txn.handle) }
            return try body(txn)
        }
    }

    /// Runs `body` in a write transaction and commits it (durably, unless
    /// ``Options/noSync``) if `body` returns; aborts it if `body` throws.
    public func withWriteTransaction<T>(_ body: (Transaction) throws -> T) throws -> T {
        try resizeLock.withShared {
            let txn = try begin(flags: 0)
            let result: T
            do {
                result = try body(txn)
            } catch {
                mdb_txn_abort(txn.handle)
                throw error
            }
            try check(mdb_txn_commit(txn.handle), "mdb_txn_commit")
            return result
        }
    }

    /// Opens the named database, creating it if `create` is set.
    public func openDatabase(_ name: String, create: Bool = true) throws -> Database {
        try withWriteTransaction { txn in
            var dbi: MDB_dbi = 0
            try check(mdb_dbi_open(txn.handle, name, create ? UInt32(MDB_CREATE) : 0, &dbi), "mdb_dbi_open(\(name))")
            return Database(handle: dbi, name: name)
        }
    }

    private func begin(flags: UInt32) throws(LMDBError) -> Transaction {
        if isClosed { throw LMDBError(code: EINVAL, operation: "mdb_txn_begin on a closed environment") }
        var txn: OpaquePointer?
        try check(mdb_txn_begin(handle, nil, flags, &txn), "mdb_txn_begin")
        return Transaction(handle: txn!, isReadOnly: flags & UInt32(MDB_RDONLY) != 0)
    }
}
