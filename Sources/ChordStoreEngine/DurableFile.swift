import ChordStoreDomain
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Small files written so that a crash leaves them whole, and the errors of file calls:
/// `views/open` (``ViewsMarker``, rewritten in place), `views/restore-point`
/// (``ViewsRestorePoint``, replaced through a rename), and a backup's files
/// (``BackupReceiver``, ``SequentialFileWriter``).
enum DurableFile {
    /// Writes `bytes` over the start of the file at `path` (made if absent), cuts it to
    /// their length, and syncs it. A new file's directory is not synced: see
    /// ``sync(_:)``.
    static func write(_ bytes: [UInt8], to path: String) throws(ChordStoreError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("open", path) }
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        // A short write sets no errno.
        guard written == bytes.count else { throw failure("write", path, code: written < 0 ? errno : EIO) }
        guard ftruncate(fd, off_t(bytes.count)) == 0, fsync(fd) == 0 else { throw failure("write", path) }
    }

    /// Replaces the file at `target` with `bytes`: a new file beside it (its name and
    /// `.new`), synced, renamed over the old, then the directory synced. A crash leaves the
    /// old file or the new. `renamed` is set once the rename is done: should the
    /// directory's sync fail then, either may be the one a crash leaves. A failure before
    /// the rename removes the new file.
    static func replace(_ target: URL, with bytes: [UInt8], renamed: inout Bool) throws(ChordStoreError) {
        let temporary = target.path + ".new"
        do throws(ChordStoreError) {
            try write(bytes, to: temporary)
            guard rename(temporary, target.path) == 0 else { throw failure("rename", temporary) }
        } catch {
            unlink(temporary)  // a full disk keeps no half-written file
            throw error
        }
        renamed = true
        try sync(target.deletingLastPathComponent().path)
    }

    /// Removes the file at `target`, if there is one, and syncs its directory.
    static func remove(_ target: URL) throws(ChordStoreError) {
        guard unlink(target.path) == 0 || errno == ENOENT else { throw failure("remove", target.path) }
        try sync(target.deletingLastPathComponent().path)
    }

    /// fsyncs the file or directory at `path` (a directory after a file in it was made,
    /// renamed or removed).
    static func sync(_ path: String) throws(ChordStoreError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("open", path) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw failure("sync", path) }
    }

    /// The error of a failed `action` on `path`, from `code` (`errno` by default): a full
    /// disk as `RESOURCE_EXHAUSTED`, reason `DISK_FULL`; anything else as `UNAVAILABLE`.
    static func failure(_ action: String, _ path: String, code: Int32 = errno) -> ChordStoreError {
        let message = "cannot \(action) \(path): \(String(cString: strerror(code)))"
        if code == ENOSPC || code == EDQUOT { return ChordStoreError(.resourceExhausted, "the disk is full: \(message)", reason: .diskFull) }
        return ChordStoreError(.unavailable, message)
    }
}
