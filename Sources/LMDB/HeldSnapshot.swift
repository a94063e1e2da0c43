public import Foundation
internal import CLMDB
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A committed state of an environment that no later commit may overwrite: a read
/// transaction kept open (LMDB never reuses the pages of a snapshot a reader still
/// sees), with the meta page of the commit that made it.
///
/// It is how an environment written without fsync (``Environment/Options/noSync``) gets a
/// state that survives a power loss: hold a snapshot, ``Environment/sync()``, keep its
/// ``meta`` somewhere durable. Until ``release()``, every page of that state stays on disk
/// as it was, whatever commits follow; ``Environment/rollBack(directory:to:)`` then makes
/// the environment that state again, whatever those commits left half-written.
///
/// The transaction is held outside the environment's resize lock (it would block map
/// growths for as long as it is held): liblmdb 0.9 keeps nothing of a read transaction in
/// the map (its reader slot is in the lock file), and a held snapshot is never read
/// through, only released.
public final class HeldSnapshot: @unchecked Sendable {
    private let handle: OpaquePointer
    private let environment: Environment
    private let released = Atomic(false)
    /// The commit this snapshot shows, and its meta page.
    public let meta: SnapshotMeta

    init(handle: OpaquePointer, environment: Environment, meta: SnapshotMeta) {
        self.handle = handle
        self.environment = environment
        self.meta = meta
    }

    /// Ends the snapshot: later commits may reuse its pages. Calling it again, or after
    /// the environment closed (which ended it), does nothing.
    public func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        environment.resizeLock.withShared {
            if !environment.isClosed { mdb_txn_abort(handle) }
        }
    }

    deinit { release() }
}

/// The meta page a commit wrote (liblmdb 0.9's data format 1, 64-bit): its transaction
/// id, the roots of its trees and its last page. Written back over an environment's two
/// meta pages, it makes the environment that commit's state again.
public struct SnapshotMeta: Sendable, Hashable {
    /// The transaction id of the commit.
    public let transactionID: UInt64
    /// The environment's page size.
    public let pageSize: Int
    /// The last page the commit's state uses: the data file must hold it.
    public let lastPage: UInt64
    /// The meta page's first ``length`` bytes: the page header and the meta record.
    public let bytes: [UInt8]

    /// Bytes kept of a meta page: a 16-byte page header and liblmdb's 136-byte `MDB_meta`.
    public static let length = 152
    static let headerLength = 16
    static let magic: UInt32 = 0xBEEF_C0DE
    static let dataVersion: UInt32 = 1

    /// Reads a meta page's first ``length`` bytes; `nil` unless they are one of liblmdb
    /// 0.9's data format on a 64-bit little-endian machine, for pages of `pageSize` bytes.
    public init?(bytes: [UInt8], pageSize: Int) {
        guard bytes.count == Self.length, MemoryLayout<Int>.size == 8, 1.littleEndian == 1 else { return nil }
        func integer<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
            bytes.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
        }
        // MDB_meta: magic 4, version 4, address 8, map size 8, two MDB_db of 48 (the
        // first's leading 4 bytes hold the page size), last page 8, transaction id 8.
        guard integer(16, UInt32.self) == Self.magic, integer(20, UInt32.self) == Self.dataVersion,
            Int(integer(40, UInt32.self)) == pageSize, pageSize >= 512
        else { return nil }
        self.bytes = bytes
        self.pageSize = pageSize
        lastPage = integer(136, UInt64.self)
        transactionID = integer(144, UInt64.self)
    }
}

extension Environment {
    /// Holds the environment's last committed state (see ``HeldSnapshot``), and runs
    /// `body` in it first (to read what it holds). No commit runs meanwhile: the two meta
    /// pages are read while a write transaction is held, so the one of this state is whole.
    public func holdSnapshot<T>(_ body: (Transaction) throws -> T) throws -> (snapshot: HeldSnapshot, value: T) {
        try resizeLock.withShared {
            let writer = try begin(flags: 0)
            defer { mdb_txn_abort(writer.handle) }
            let reader = try begin(flags: UInt32(MDB_RDONLY))
            do {
                let meta = try readMeta(of: UInt64(mdb_txn_id(reader.handle)))
                let value = try body(reader)
                return (HeldSnapshot(handle: reader.handle, environment: self, meta: meta), value)
            } catch {
                mdb_txn_abort(reader.handle)
                throw error
            }
        }
    }

    /// The meta page of transaction `id`, read from the data file. Call it while no
    /// commit can run.
    private func readMeta(of id: UInt64) throws(LMDBError) -> SnapshotMeta {
        var fd: mdb_filehandle_t = -1
        try check(mdb_env_get_fd(handle, &fd), "mdb_env_get_fd")
        var stat = MDB_stat()
        mdb_env_stat(handle, &stat)
        let pageSize = Int(stat.ms_psize)
        for slot in 0..<2 {
            var bytes = [UInt8](repeating: 0, count: SnapshotMeta.length)
            let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(slot * pageSize)) }
            guard read == SnapshotMeta.length else { throw LMDBError(code: read < 0 ? errno : EIO, operation: "pread(meta page \(slot))") }
            if let meta = SnapshotMeta(bytes: bytes, pageSize: pageSize), meta.transactionID == id { return meta }
        }
        throw LMDBError(code: MDB_INCOMPATIBLE, operation: "no meta page of transaction \(id) in a format this build knows")
    }

    /// Makes the environment in `directory` (closed: no process may have it open) the
    /// state `meta` was written by: both meta pages get its meta record, durably. Its
    /// pages must have stayed as they were since (``HeldSnapshot``): whatever later
    /// commits wrote is then free space. Throws if the data file is too short to hold
    /// that state; the file is then left as it was.
    public static func rollBack(directory: URL, to meta: SnapshotMeta) throws(LMDBError) {
        let path = directory.appendingPathComponent("data.mdb").path
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw LMDBError(code: errno, operation: "open(\(path))") }
        defer { closeDescriptor(fd) }
        let size = lseek(fd, 0, SEEK_END)
        guard size >= 0 else { throw LMDBError(code: errno, operation: "lseek(\(path))") }
        guard UInt64(size) >= (meta.lastPage + 1) * UInt64(meta.pageSize) else {
            throw LMDBError(code: MDB_CORRUPTED, operation: "\(path) ends before page \(meta.lastPage) of the state to roll back to")
        }
        let record = Array(meta.bytes[SnapshotMeta.headerLength...])
        for slot in 0..<2 {
            let offset = off_t(slot * meta.pageSize + SnapshotMeta.headerLength)
            let written = record.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, offset) }
            guard written == record.count else { throw LMDBError(code: written < 0 ? errno : EIO, operation: "pwrite(\(path), meta page \(slot))") }
        }
        guard fsync(fd) == 0 else { throw LMDBError(code: errno, operation: "fsync(\(path))") }
    }
}

/// `close(2)`, where `Environment`'s own `close()` would be found first.
private func closeDescriptor(_ fd: Int32) {
    _ = close(fd)
}
