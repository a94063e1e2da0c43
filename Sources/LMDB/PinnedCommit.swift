internal import CLMDB
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A commit that no later commit may overwrite: a read transaction kept open on it (LMDB
/// never reuses the pages of a state a reader still sees), with the meta page the commit
/// wrote (``Environment/pinLastCommit(_:)``).
///
/// It is how an environment written without fsync (``Environment/Options/noSync``) gets a
/// state that survives a power loss: pin the last commit, ``Environment/sync()``, keep its
/// ``meta`` somewhere durable. Until ``release()``, every page of that state stays on disk
/// as it was, whatever commits follow; ``Environment/rollBack(directory:to:)`` then makes
/// the environment that state again, whatever those commits left half-written.
///
/// The transaction is held outside the environment's resize lock (it would block map
/// growths for as long as it is held): liblmdb 0.9 keeps nothing of a read transaction in
/// the map (its reader slot is in the lock file), and a pinned commit is never read
/// through, only released.
public final class PinnedCommit: @unchecked Sendable {
    private let handle: OpaquePointer
    private let environment: Environment
    private let released = Atomic(false)
    /// The commit's meta page.
    public let meta: CommitMeta

    init(handle: OpaquePointer, environment: Environment, meta: CommitMeta) {
        self.handle = handle
        self.environment = environment
        self.meta = meta
    }

    /// Unpins the commit: later commits may reuse its pages. Calling it again, or after
    /// the environment closed (which ended it), does nothing.
    public func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        environment.resizeLock.withShared {
            if !environment.isClosed { mdb_txn_abort(handle) }
        }
    }

    deinit { release() }
}

extension Environment {
    /// Pins the environment's last commit (see ``PinnedCommit``), and runs `body` in a
    /// read transaction of it first (to read what it holds). No commit runs meanwhile: the
    /// two meta pages are read while a write transaction is held, so the commit's is whole.
    public func pinLastCommit<T>(_ body: (Transaction) throws -> T) throws -> (commit: PinnedCommit, value: T) {
        try resizeLock.withShared {
            let writer = try begin(flags: 0)
            defer { mdb_txn_abort(writer.handle) }
            let reader = try begin(flags: UInt32(MDB_RDONLY))
            do {
                let meta = try readMeta(of: UInt64(mdb_txn_id(reader.handle)))
                let value = try body(reader)
                return (PinnedCommit(handle: reader.handle, environment: self, meta: meta), value)
            } catch {
                mdb_txn_abort(reader.handle)
                throw error
            }
        }
    }

    /// The meta page of transaction `id`, read from the data file. Call it while no
    /// commit can run.
    private func readMeta(of id: UInt64) throws(LMDBError) -> CommitMeta {
        var fd: mdb_filehandle_t = -1
        try check(mdb_env_get_fd(handle, &fd), "mdb_env_get_fd")
        var stat = MDB_stat()
        mdb_env_stat(handle, &stat)
        let pageSize = Int(stat.ms_psize)
        for slot in 0..<2 {
            var bytes = [UInt8](repeating: 0, count: CommitMeta.length)
            let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(slot * pageSize)) }
            guard read == CommitMeta.length else { throw LMDBError(code: read < 0 ? errno : EIO, operation: "pread(meta page \(slot))") }
            if let meta = CommitMeta(bytes: bytes, pageSize: pageSize), meta.transactionID == id { return meta }
        }
        throw LMDBError(code: MDB_INCOMPATIBLE, operation: "no meta page of transaction \(id) in a format this build knows")
    }
}
