public import Foundation
internal import CLMDB
#if canImport(CSystemExtras) && os(Linux)
import CSystemExtras
#endif
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
        /// map could damage the database, so only for data that can be rebuilt. Not on
        /// copy-on-write filesystems, where a reserved block is not kept for the next
        /// write (see ``reservesBlocks(in:)``).
        public var writeMap = false
        /// Open for reading only, without a lock file (`MDB_RDONLY | MDB_NOLOCK`): for a
        /// copy no other process opens, such as a backup being checked.
        public var readOnly = false

        /// The default options: 256 MiB map, durable commits.
        public init() {}
    }

    let handle: OpaquePointer
    private let writeMap: Bool
    let resizeLock = ReadWriteLock()
    /// Copies and syncs running (``copy(to:compact:)``, ``sync()``), which a resize waits
    /// for without holding the lock: they take as long as the disk does, and a resize
    /// queued on the lock would hold up every transaction behind it meanwhile.
    private let copies = NSCondition()
    private var copiesRunning = 0
    private let closed = Atomic(false)
    /// Read transactions reset after use, renewed by the next reads (``withReadTransaction(_:)``).
    private let idleReaders = Mutex<[IdleReader]>([])
    /// Read transactions begun (``readTransactionsBegun``).
    private let readsBegun = Atomic(0)

    /// A reset read transaction: no thread uses it until one takes it out of
    /// `idleReaders` and renews it (`MDB_NOTLS` lets any thread do so).
    private struct IdleReader: @unchecked Sendable {
        let handle: OpaquePointer
    }
    /// Set if a map resize failed half-way (liblmdb then holds no map): every later
    /// transaction fails instead of touching it.
    private let broken = Atomic(false)

    /// Whether ``close()`` was called.
    public var isClosed: Bool { closed.load(ordering: .acquiring) }
    /// The directory holding `data.mdb` and `lock.mdb`.
    public let directory: URL

    /// Opens (creating if needed) the environment in `directory`, which must exist, and
    /// clears reader slots left by dead processes. With ``Options/writeMap``, a disk too
    /// small for the requested map opens a smaller one (down to the pages in use) rather
    /// than failing; ``setMapSize(_:)`` grows it when space is freed.
    public init(directory: URL, options: Options = Options()) throws(LMDBError) {
        var env: OpaquePointer?
        try check(mdb_env_create(&env), "mdb_env_create")
        guard let env else { throw LMDBError(code: ENOMEM, operation: "mdb_env_create") }
        // Every step that can fail runs before `self` is initialized: a throw then closes
        // the handle here, once, and no deinit follows.
        do {
            try check(mdb_env_set_maxdbs(env, MDB_dbi(options.maxDatabases)), "mdb_env_set_maxdbs")
            try check(mdb_env_set_maxreaders(env, options.maxReaders), "mdb_env_set_maxreaders")
            try check(mdb_env_set_mapsize(env, options.mapSize), "mdb_env_set_mapsize")
            var flags = UInt32(MDB_NOTLS)
            if options.noSync { flags |= UInt32(MDB_NOSYNC) }
            if options.writeMap { flags |= UInt32(MDB_WRITEMAP) }
            if options.readOnly {
                flags |= UInt32(MDB_RDONLY) | UInt32(MDB_NOLOCK)
            } else {
                try Self.reserveLockFile(in: directory, readers: options.maxReaders)
            }
            try check(mdb_env_open(env, directory.path, flags, 0o600), "mdb_env_open(\(directory.path))")
            var dead: Int32 = 0
            if !options.readOnly { try check(mdb_reader_check(env, &dead), "mdb_reader_check") }
            if options.writeMap { try Self.reserveShrinking(env, directory: directory) }
        } catch {
            mdb_env_close(env)
            throw error
        }
        self.handle = env
        self.directory = directory
        self.writeMap = options.writeMap
    }

    deinit {
        close()
    }

    /// Closes the environment after the transactions in flight end. Later transactions fail
    /// with `EINVAL`. Calling it again does nothing.
    public func close() {
        resizeLock.withExclusive {
            if !closed.exchange(true, ordering: .acquiringAndReleasing) {
                for idle in idleReaders.withLock({ idle in defer { idle.removeAll() }; return idle }) { mdb_txn_abort(idle.handle) }
                mdb_env_close(handle)
            }
        }
    }

    /// The current map size in bytes.
    public var mapSize: Int { usage.mapSize }

    /// The size of a page, in bytes (what ``DatabaseStat/pages`` counts); 0 once the
    /// environment is closed.
    public var pageSize: Int {
        resizeLock.withShared {
            guard !isClosed, !broken.load(ordering: .acquiring) else { return 0 }
            var stat = MDB_stat()
            mdb_env_stat(handle, &stat)
            return Int(stat.ms_psize)
        }
    }

    /// The map's size, and its bytes beyond the last page in use: what commits can still
    /// allocate before one fails with `MDB_MAP_FULL` (pages freed by earlier commits
    /// aside). Zeros once the environment is closed.
    public var usage: (mapSize: Int, spare: Int) {
        resizeLock.withShared {
            guard !isClosed, !broken.load(ordering: .acquiring) else { return (0, 0) }
            return unlockedUsage
        }
    }

    /// ``usage`` for callers that hold `resizeLock`.
    private var unlockedUsage: (mapSize: Int, spare: Int) {
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        var stat = MDB_stat()
        mdb_env_stat(handle, &stat)
        return (info.me_mapsize, max(0, info.me_mapsize - (info.me_last_pgno + 1) * Int(stat.ms_psize)))
    }

    /// Grows (or shrinks) the map. Waits until no copy (``copy(to:compact:)``) runs and no
    /// transaction is active in this process.
    ///
    /// With ``Options/writeMap``, the file's blocks are reserved up to the new size; if
    /// the disk cannot hold them (`ENOSPC`, ``LMDBError/isDiskFull``), the map goes back
    /// to its previous size before the error is thrown, so no page of the map is ever
    /// without a block behind it.
    public func setMapSize(_ size: Int) throws(LMDBError) {
        copies.lock()
        while copiesRunning > 0 { copies.wait() }
        copies.unlock()
        try resizeLock.withExclusive { () throws(LMDBError) in
            if isClosed { throw LMDBError(code: EINVAL, operation: "mdb_env_set_mapsize on a closed environment") }
            try checkUsable()
            let previous = unlockedUsage.mapSize
            try resize(to: size)
            guard writeMap else { return }
            do throws(LMDBError) {
                try Self.reserve(handle, bytes: unlockedUsage.mapSize, directory: directory)
            } catch {
                try resize(to: previous)
                throw error
            }
        }
    }

    /// `mdb_env_set_mapsize`; a failure leaves liblmdb without a map, so it breaks the
    /// environment for good (every later transaction fails).
    private func resize(to size: Int) throws(LMDBError) {
        let rc = mdb_env_set_mapsize(handle, size)
        if rc != MDB_SUCCESS {
            broken.store(true, ordering: .releasing)
            throw LMDBError(code: rc, operation: "mdb_env_set_mapsize(\(size))")
        }
    }

    func checkUsable() throws(LMDBError) {
        if broken.load(ordering: .acquiring) {
            throw LMDBError(code: EIO, operation: "\(directory.path): a map resize failed earlier; reopen the environment")
        }
    }

    /// Reserves the data file's blocks up to the map size; when the disk cannot hold them,
    /// halves the map (never below the pages in use) and tries again.
    private static func reserveShrinking(_ env: OpaquePointer, directory: URL) throws(LMDBError) {
        while true {
            var info = MDB_envinfo()
            mdb_env_info(env, &info)
            do {
                try reserve(env, bytes: info.me_mapsize, directory: directory)
                return
            } catch where error.isDiskFull {
                var stat = MDB_stat()
                mdb_env_stat(env, &stat)
                let page = Int(stat.ms_psize)
                let inUse = (info.me_last_pgno + 1) * page
                let smaller = max(inUse, (info.me_mapsize / 2) / page * page)
                guard smaller < info.me_mapsize, smaller >= minimumReserve else { throw error }
                try check(mdb_env_set_mapsize(env, smaller), "mdb_env_set_mapsize(\(smaller))")
            }
        }
    }

    /// Reserves the blocks of `lock.mdb`, which liblmdb maps and writes its reader table
    /// through: a reader slot on a page the disk never held would kill the process with
    /// SIGBUS on a full disk. The file is made at least as large as liblmdb makes it for
    /// `readers` slots (one 64-byte slot each, after two 64-byte header lines).
    private static func reserveLockFile(in directory: URL, readers: UInt32) throws(LMDBError) {
        let path = directory.appendingPathComponent("lock.mdb").path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LMDBError(code: errno, operation: "open(\(path))") }
        #if canImport(Glibc)
        defer { _ = Glibc.close(fd) }  // the class's own close() hides close(2)
        #else
        defer { _ = Darwin.close(fd) }
        #endif
        let current = lseek(fd, 0, SEEK_END)
        guard current >= 0 else { throw LMDBError(code: errno, operation: "lseek(\(path))") }
        let needed = (Int(readers) + 2) * 64
        let size = max(Int(current), (needed + 4_095) / 4_096 * 4_096)
        let rc = posix_fallocate(fd, 0, off_t(size))
        if rc != 0 { throw LMDBError(code: rc, operation: "posix_fallocate(\(size) bytes of \(path))") }
    }

    /// Whether the filesystem holding `directory` keeps the blocks `posix_fallocate`
    /// reserves for a file's later writes: not on copy-on-write filesystems (btrfs,
    /// bcachefs, ZFS), where an overwrite takes a new block and a write through a
    /// writable map can still fault when the disk is full; ``Options/writeMap`` is unsafe
    /// there.
    public static func reservesBlocks(in directory: URL) -> Bool {
        #if os(Linux)
        var stats = statfs()
        guard statfs(directory.path, &stats) == 0 else { return true }
        let copyOnWrite: Set<Int> = [0x9123_683E, 0xCA45_1A4E, 0x2FC1_2FC1]  // btrfs, bcachefs, ZFS
        return !copyOnWrite.contains(Int(stats.f_type))
        #else
        return true
        #endif
    }

    /// The smallest map a writable-map environment opens with when its disk is short,
    /// and the smallest step it grows by.
    static let minimumReserve = 1 << 20

    /// Grows the map by `step` bytes (at least 1 MiB), but not past `limit`; with
    /// ``Options/writeMap``, on a disk that cannot hold them, by as much as it holds in
    /// halved steps, at least 1 MiB. Throws the full disk's error (the map unchanged) when
    /// not even that fits.
    public func grow(by step: Int, upTo limit: Int = .max) throws(LMDBError) {
        var step = min(max(step, Self.minimumReserve), max(0, limit - mapSize))
        guard step > 0 else { return }
        while true {
            do {
                try setMapSize(mapSize + step)
                return
            } catch where error.isDiskFull && writeMap && step / 2 >= Self.minimumReserve {
                step /= 2
            }
        }
    }

    /// `posix_fallocate` over the first `bytes` of the data file (see ``Options/writeMap``).
    private static func reserve(_ env: OpaquePointer, bytes: Int, directory: URL) throws(LMDBError) {
        var fd: mdb_filehandle_t = -1
        try check(mdb_env_get_fd(env, &fd), "mdb_env_get_fd")
        let rc = posix_fallocate(fd, 0, off_t(bytes))
        if rc != 0 { throw LMDBError(code: rc, operation: "posix_fallocate(\(bytes) bytes of \(directory.path)/data.mdb)") }
    }

    /// Writes a copy of the environment's data file to `fd` (a file or a pipe), from one
    /// read transaction, so it is consistent while commits go on; with `compact`, free
    /// pages are left out and the copy is renumbered (LMDB's `MDB_CP_COMPACT`). Blocks the
    /// calling thread until the copy is written, at the pace `fd` takes it. A map resize
    /// (``setMapSize(_:)``) waits for every copy to end before it takes the lock, so that
    /// transactions never wait behind it meanwhile.
    public func copy(to fd: Int32, compact: Bool) throws(LMDBError) {
        try whileResizesWait { () throws(LMDBError) in
            if isClosed { throw LMDBError(code: EINVAL, operation: "mdb_env_copyfd2 on a closed environment") }
            try checkUsable()
            try check(mdb_env_copyfd2(handle, fd, compact ? UInt32(MDB_CP_COMPACT) : 0), "mdb_env_copyfd2")
        }
    }

    /// Flushes every commit to disk (`mdb_env_sync` with force): what an environment opened
    /// with ``Options/noSync`` needs before its files may be trusted after a power loss.
    /// A resize waits for it without holding up transactions (as for a copy).
    public func sync() throws(LMDBError) {
        try whileResizesWait { () throws(LMDBError) in
            if isClosed { throw LMDBError(code: EINVAL, operation: "mdb_env_sync on a closed environment") }
            try checkUsable()
            try check(mdb_env_sync(handle, 1), "mdb_env_sync")
        }
    }

    /// How many copies (``copy(to:compact:)``) are running now.
    package var runningCopies: Int {
        copies.lock()
        defer { copies.unlock() }
        return copiesRunning
    }

    /// Runs `body` under the resize lock, shared, counted among the copies a resize waits
    /// for before it asks for the lock.
    private func whileResizesWait<T>(_ body: () throws(LMDBError) -> T) throws(LMDBError) -> T {
        copies.lock()
        copiesRunning += 1
        copies.unlock()
        defer {
            copies.lock()
            copiesRunning -= 1
            copies.broadcast()
            copies.unlock()
        }
        return try resizeLock.withShared(body)
    }

    /// Runs `body` in a read-only snapshot. The transaction and every buffer it returned
    /// are invalid once `body` returns. Readers never block the writer.
    ///
    /// A snapshot that ends is reset (`mdb_txn_reset`), not freed, and the next one renews
    /// it (`mdb_txn_renew`): it keeps its reader slot, so a read takes no lock of the lock
    /// file and allocates nothing. At most 16 wait between reads.
    public func withReadTransaction<T>(_ body: (Transaction) throws -> T) throws -> T {
        try resizeLock.withShared {
            let txn = try beginRead()
            defer { endRead(txn) }
            return try body(txn)
        }
    }

    /// How many reset read transactions wait to be renewed, at most.
    static let maxIdleReaders = 16

    /// Runs `body` with a read transaction that begins only if `body` asks for it
    /// (``LazyReadTransaction/transaction()``), and ends with the call: a read that may
    /// need the environment, and mostly does not, costs nothing when it does not.
    public func withLazyReadTransaction<T>(_ body: (LazyReadTransaction) throws -> T) throws -> T {
        let lazy = LazyReadTransaction(environment: self)
        defer { lazy.end() }
        return try body(lazy)
    }

    /// Read transactions begun since the environment was opened (for tests).
    package var readTransactionsBegun: Int { readsBegun.load(ordering: .relaxed) }

    /// A read transaction: an idle one renewed, else a new one. Call under `resizeLock`.
    func beginRead() throws(LMDBError) -> Transaction {
        if isClosed { throw LMDBError(code: EINVAL, operation: "mdb_txn_begin on a closed environment") }
        try checkUsable()
        readsBegun.add(1, ordering: .relaxed)
        while let idle = idleReaders.withLock({ $0.popLast() }) {
            if mdb_txn_renew(idle.handle) == MDB_SUCCESS { return Transaction(handle: idle.handle, isReadOnly: true) }
            mdb_txn_abort(idle.handle)
        }
        return try begin(flags: UInt32(MDB_RDONLY))
    }

    /// Ends a read transaction from ``beginRead()``: reset and kept for the next read, or
    /// freed when enough are kept. Call under `resizeLock`.
    func endRead(_ txn: Transaction) {
        mdb_txn_reset(txn.handle)
        let kept = idleReaders.withLock { idle in
            guard idle.count < Self.maxIdleReaders else { return false }
            idle.append(IdleReader(handle: txn.handle))
            return true
        }
        if !kept { mdb_txn_abort(txn.handle) }
    }

    /// How many reset read transactions wait to be renewed (for tests).
    package var idleReaderCount: Int { idleReaders.withLock { $0.count } }

    /// Runs `body` in a write transaction and commits it (durably, unless
    /// ``Options/noSync``) if `body` returns; aborts it if `body` throws.
    ///
    /// liblmdb reports a short write of the commit's pages as `EIO`; when the disk has
    /// next to no room left, that is the disk filling up, and it is thrown as `ENOSPC`
    /// (``LMDBError/isDiskFull``).
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
            let rc = mdb_txn_commit(txn.handle)
            if rc == EIO, case let free = freeBytes, free < Self.nearlyFull {
                throw LMDBError(code: ENOSPC, operation: "mdb_txn_commit (a short write: \(free) bytes left on the disk)")
            }
            try check(rc, "mdb_txn_commit")
            return result
        }
    }

    /// Below this many free bytes, the disk counts as full.
    static let nearlyFull = 4 << 20

    /// Bytes the filesystem holding the environment has free for this process.
    public var freeBytes: Int {
        var stats = statvfs()
        guard statvfs(directory.path, &stats) == 0 else { return .max }
        return Int(stats.f_bavail) * Int(stats.f_frsize)
    }

    /// Opens the named database, creating it if `create` is set.
    public func openDatabase(_ name: String, create: Bool = true) throws -> Database {
        try withWriteTransaction { txn in
            var dbi: MDB_dbi = 0
            try check(mdb_dbi_open(txn.handle, name, create ? UInt32(MDB_CREATE) : 0, &dbi), "mdb_dbi_open(\(name))")
            return Database(handle: dbi, name: name)
        }
    }

    /// The existing databases `names`, opened in a read-only transaction that is
    /// committed, so the handles stay valid while the environment is open: how a
    /// read-only environment (``Options/readOnly``) opens its databases once.
    /// `MDB_NOTFOUND` if one is missing.
    public func existingDatabases(_ names: [String]) throws -> [Database] {
        try resizeLock.withShared {
            let txn = try begin(flags: UInt32(MDB_RDONLY))
            let opened: [Database]
            do {
                opened = try names.map { name throws(LMDBError) in try txn.existingDatabase(name) }
            } catch {
                mdb_txn_abort(txn.handle)
                throw error
            }
            try check(mdb_txn_commit(txn.handle), "mdb_txn_commit")
            return opened
        }
    }

    func begin(flags: UInt32) throws(LMDBError) -> Transaction {
        if isClosed { throw LMDBError(code: EINVAL, operation: "mdb_txn_begin on a closed environment") }
        try checkUsable()
        var txn: OpaquePointer?
        try check(mdb_txn_begin(handle, nil, flags, &txn), "mdb_txn_begin")
        return Transaction(handle: txn!, isReadOnly: flags & UInt32(MDB_RDONLY) != 0)
    }
}
