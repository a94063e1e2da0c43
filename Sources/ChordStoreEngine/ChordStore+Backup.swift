public import ChordStoreDomain
public import Foundation
import LMDB
#if canImport(Glibc)
import Glibc
#endif

extension ChordStore {
    /// Streams a consistent copy of the store's data files to `sink`, while commits go
    /// on: the views' file, then the log's, each through LMDB's compacting copy of one
    /// read transaction (``BackupFiles``). The log's copy is taken after the views', so it
    /// holds at least every event they reflect; a store opened on the copy catches its
    /// views up with its log. `sink` is awaited for each part: a slow sink slows the copy
    /// instead of filling memory. Fails with `failedPrecondition` for a store in memory.
    public func copyFiles(_ sink: (BackupPart) async throws -> Void) async throws {
        guard let lmdb = backend as? LMDBBackend else {
            throw ChordStoreError(.failedPrecondition, "a store in memory has no files to copy")
        }
        for (name, environment) in [(BackupFiles.views, lmdb.viewsEnv), (BackupFiles.log, lmdb.logEnv)] {
            try await sink(.file(name))
            let copy = try EnvironmentCopy(environment)
            var digest = BlockDigest()
            while let block = try await copy.next() {
                digest.update(block)
                try await sink(.bytes(block))
            }
            try await sink(.fileEnd(name, bytes: digest.count, digest: digest.value))
        }
    }

    /// The on-disk format and views layout this version writes (what a backup's files have).
    public static var dataFormat: (format: Int, viewsVersion: Int) {
        (Int(LMDBBackend.formatVersion), Int(LMDBBackend.viewsVersion))
    }

    /// Makes `target` (new, or an empty directory) a data directory holding the backup in
    /// `backup`: checks the manifest and every file's size and ``BlockDigest``, copies the
    /// files in (the log's last, each synced), opens the store there (its views are caught
    /// up with its log) and checks that its log ends at the manifest's event. With `move`,
    /// the files are moved instead of copied (same filesystem; for a directory that was
    /// only ever a staging area) and not checked again. `target` may hold the entries
    /// named in `ignoring` (a bootstrap's staging directory inside it). Returns the
    /// restored log's last event; `progress(done, total)` reports bytes checked and copied.
    @discardableResult
    public static func restore(
        backup: URL, into target: URL, move: Bool = false, ignoring: Set<String> = [], progress: (UInt64, UInt64) -> Void = { _, _ in }
    ) throws(ChordStoreError) -> LogPosition {
        let manifest = try BackupManifest.read(from: backup)
        guard manifest.format <= Int(LMDBBackend.formatVersion) else {
            throw ChordStoreError(
                .failedPrecondition,
                "the backup has data format \(manifest.format), newer than this chordstore reads (\(LMDBBackend.formatVersion)): restore it with the chordstore that made it, or a newer one")
        }
        guard manifest.files.map(\.name) == BackupFiles.all else {
            throw ChordStoreError(.dataLoss, "the backup's manifest lists \(manifest.files.map(\.name)), not \(BackupFiles.all)")
        }
        try BackupReceiver.checkEmpty(target, ignoring: ignoring)
        let total = manifest.files.reduce(UInt64(0)) { $0 + $1.bytes } * (move ? 1 : 2)
        var done: UInt64 = 0
        if !move {
            for file in manifest.files {
                try check(file, in: backup) { done += $0; progress(done, total) }
            }
        }
        try BackupReceiver.prepareEmpty(target, ignoring: ignoring)
        do {
            try FileManager.default.createDirectory(at: target.appendingPathComponent("views"), withIntermediateDirectories: true)
        } catch {
            throw ChordStoreError(.unavailable, "cannot create \(target.path)/views: \(error.localizedDescription)")
        }
        // The views first: a directory with views and no log yet opens as a new store
        // whose views are not this log's, and are rebuilt.
        for file in manifest.files {
            let source = backup.appendingPathComponent(file.name), destination = target.appendingPathComponent(file.name)
            let partial = destination.appendingPathExtension("partial")
            do {
                if move {
                    try FileManager.default.moveItem(at: source, to: partial)
                } else {
                    try copyFile(source, to: partial) { done += $0; progress(done, total) }
                }
                try BackupReceiver.syncPath(partial.path)
                try FileManager.default.moveItem(at: partial, to: destination)
                try BackupReceiver.syncPath(destination.deletingLastPathComponent().path)
            } catch let error as ChordStoreError {
                throw error
            } catch {
                throw ChordStoreError(.unavailable, "cannot place \(file.name) in \(target.path): \(error.localizedDescription)")
            }
            done += move ? file.bytes : 0
            progress(done, total)
        }
        let store = try ChordStore.open(at: target)
        defer { store.close() }
        let head = try store.head()
        guard head.sequence == manifest.logSequence, String(format: "%016llx", head.checksum) == manifest.logChecksum else {
            throw ChordStoreError(
                .dataLoss,
                "the restored log ends at event \(head.sequence) (checksum \(String(format: "%016llx", head.checksum))), the manifest says \(manifest.logSequence) (\(manifest.logChecksum))")
        }
        return head
    }

    /// Checks a backup's file against its size and digest.
    private static func check(_ file: BackupManifest.File, in backup: URL, progress: (UInt64) -> Void) throws(ChordStoreError) {
        let path = backup.appendingPathComponent(file.name).path
        var digest = BlockDigest()
        try readBlocks(path) { block in
            digest.update(block)
            progress(UInt64(block.count))
        }
        guard digest.count == file.bytes, String(format: "%016llx", digest.value) == file.xxh64 else {
            throw ChordStoreError(
                .dataLoss,
                "the backup's \(file.name) is damaged: \(digest.count) bytes with digest \(String(format: "%016llx", digest.value)), the manifest says \(file.bytes) bytes with \(file.xxh64)")
        }
    }

    /// Copies the file at `source` to `destination` (which must not exist).
    private static func copyFile(_ source: URL, to destination: URL, progress: (UInt64) -> Void) throws(ChordStoreError) {
        let fd = Glibc.open(destination.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw BackupReceiver.failure("create", destination.path) }
        defer { _ = Glibc.close(fd) }
        try readBlocks(source.path) { (block: UnsafeRawBufferPointer) throws(ChordStoreError) in
            try BackupReceiver.writeAll(block, to: fd, path: destination.path)
            progress(UInt64(block.count))
        }
    }

    /// Calls `body` with the file at `path` in blocks of ``BlockDigest/blockSize``.
    private static func readBlocks(_ path: String, _ body: (UnsafeRawBufferPointer) throws(ChordStoreError) -> Void) throws(ChordStoreError) {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw ChordStoreError(.notFound, "the backup has no \(path)") }
            throw BackupReceiver.failure("open", path)
        }
        defer { _ = Glibc.close(fd) }
        var block = [UInt8](repeating: 0, count: BlockDigest.blockSize)
        while true {
            let count = block.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw BackupReceiver.failure("read", path) }
            if count == 0 { return }
            var failure: ChordStoreError?
            block.withUnsafeBytes { bytes in
                do throws(ChordStoreError) {
                    try body(UnsafeRawBufferPointer(rebasing: bytes[..<count]))
                } catch {
                    failure = error
                }
            }
            if let failure { throw failure }
        }
    }
}
