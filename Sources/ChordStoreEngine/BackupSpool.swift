import ChordStoreDomain
import Foundation
import LMDB
#if canImport(Glibc)
import Glibc
#endif

/// Where a backup's copies wait to be sent: `DATA/backup-spool/`, one directory per
/// backup, removed when it ends (and the whole spool when the store opens, in case a
/// process died during one).
///
/// LMDB's compacting copy (``LMDB/Environment/copy(to:compact:)``) holds the map's
/// resize lock while it runs, so it must run at disk speed, never at a client's: a
/// writer that needs to grow the map waits for it, and every reader waits behind that
/// writer. The copy therefore goes to a file here first, on a thread of its own, and is
/// sent from the file afterwards, at whatever pace the client reads.
struct BackupSpool {
    /// The spool of the data directory `directory`.
    static func root(in directory: URL) -> URL { directory.appendingPathComponent("backup-spool") }

    /// Removes every spooled copy (called when the store opens: none can be in use).
    static func clear(in directory: URL) {
        try? FileManager.default.removeItem(at: root(in: directory))
    }

    /// The directory of one backup.
    let directory: URL

    /// A new, empty directory for one backup in the data directory `data`.
    init(data: URL) throws(ChordStoreError) {
        directory = Self.root(in: data).appendingPathComponent(UUID().uuidString)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw ChordStoreError(.unavailable, "cannot create \(directory.path) for the backup's copy: \(error.localizedDescription)")
        }
    }

    /// Removes this backup's copies.
    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// Copies `environment` into the file `name` of this spool, compacted, on a thread of
    /// its own (the copy blocks); returns the file. A full disk fails with
    /// `resourceExhausted`.
    func copy(_ environment: Environment, as name: String) async throws(ChordStoreError) -> URL {
        let file = directory.appendingPathComponent(name)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, ChordStoreError>, Never>) in
            let thread = Thread {
                continuation.resume(returning: Result { () throws(ChordStoreError) in try Self.copy(environment, to: file) })
            }
            thread.name = "chordstore-backup-copy"
            thread.start()
        }
        try result.get()
        return file
    }

    private static func copy(_ environment: Environment, to file: URL) throws(ChordStoreError) {
        let fd = Glibc.open(file.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BackupReceiver.failure("create", file.path) }
        defer { _ = Glibc.close(fd) }
        do {
            try environment.copy(to: fd, compact: true)
        } catch {
            if error.isDiskFull {
                throw ChordStoreError(.resourceExhausted, "the disk is full: the backup's copy needs room in \(file.deletingLastPathComponent().path)")
            }
            throw ChordStoreError.wrapping(error)
        }
    }

    /// Calls `body` with the file's bytes, in blocks of ``BlockDigest/blockSize``.
    static func forEachBlock(of file: URL, _ body: ([UInt8]) async throws -> Void) async throws {
        guard let handle = FileHandle(forReadingAtPath: file.path) else { throw BackupReceiver.failure("open", file.path) }
        defer { try? handle.close() }
        while true {
            let block = try handle.read(upToCount: BlockDigest.blockSize) ?? Data()
            if block.isEmpty { return }
            try await body(Array(block))
        }
    }
}
