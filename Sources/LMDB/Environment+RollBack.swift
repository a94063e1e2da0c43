public import Foundation
internal import CLMDB
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Environment {
    /// Makes the environment in `directory` (closed: no process may have it open) the
    /// state `meta` was written by: both meta pages get its meta record, durably. Its
    /// pages must have stayed as they were since (``PinnedCommit``): whatever later
    /// commits wrote is then free space. Throws if the data file is too short to hold
    /// that state; the file is then left as it was.
    public static func rollBack(directory: URL, to meta: CommitMeta) throws(LMDBError) {
        let path = directory.appendingPathComponent("data.mdb").path
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw LMDBError(code: errno, operation: "open(\(path))") }
        defer { closeDescriptor(fd) }
        let size = lseek(fd, 0, SEEK_END)
        guard size >= 0 else { throw LMDBError(code: errno, operation: "lseek(\(path))") }
        guard UInt64(size) >= (meta.lastPage + 1) * UInt64(meta.pageSize) else {
            throw LMDBError(code: MDB_CORRUPTED, operation: "\(path) ends before page \(meta.lastPage) of the state to roll back to")
        }
        let record = Array(meta.bytes[CommitMeta.headerLength...])
        for slot in 0..<2 {
            let offset = off_t(slot * meta.pageSize + CommitMeta.headerLength)
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
