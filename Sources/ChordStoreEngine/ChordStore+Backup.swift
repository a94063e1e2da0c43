public import ChordStoreRecords
public import ChordStoreDomain
public import Foundation
import LMDB
#if canImport(Glibc)
import Glibc
#endif

extension ChordStore {
    /// Streams a consistent copy of the store's data files to `sink`, while commits go
    /// on: the views' file, then the log's, each LMDB's compacting copy of one read
    /// transaction (``BackupFiles``), read from a pipe as it is made (nothing is written to
    /// this disk). The log's copy is taken after the views', so it holds at least every
    /// event they reflect; a store opened on the copy catches its views up with its log.
    /// `sink` is awaited for each part: a slow sink slows the copy instead of filling
    /// memory. While a copy runs, a commit that needs a map to grow waits for it. Returns
    /// (or throws `sink`'s error) once the copy has ended. Fails with
    /// `failedPrecondition` for a store in memory. With live state, the views are first
    /// brought to the live state (they take no commit then; a copy's views serve a new
    /// follower's reads while its log arrives); on a full disk, or a map at its limit,
    /// they are copied as they are (a restore catches them up or rebuilds them).
    public func copyFiles(_ sink: (BackupPart) async throws -> Void) async throws {
        guard let lmdb = backend as? LMDBBackend else {
            if let absence = backend.logAbsence { throw absence }
            throw ChordStoreError(.failedPrecondition, "a store in memory has no files to copy")
        }
        if lmdb.live != nil {
            // A fold of up to 10,000 events, or a load of the whole state, off the concurrency pool.
            try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
                Thread.detachNewThread {
                    done.resume(with: Result { () throws(ChordStoreError) in
                        do throws(ChordStoreError) {
                            try lmdb.bringViewsUp()
                        } catch where error.code == .resourceExhausted && ((try? lmdb.viewsPlan().servesReads) ?? false) {
                            // Views of this log, behind it: copied as they are.
                        }
                    })
                }
            }
        }
        lmdb.growAheadOfCopy()
        for (name, environment) in [(BackupFiles.views, lmdb.viewsEnv), (BackupFiles.log, lmdb.logEnv)] {
            try await sink(.file(name))
            let copy = try EnvironmentCopy(environment)
            var digest = BlockDigest()
            do {
                while let block = try await copy.next() {
                    digest.update(block)
                    try await sink(.bytes(block))
                }
                // A cancelled task's stream of blocks ends early: not the file's end, and the
                // copy (its read transaction, its threads) must be ended, or a map's growth
                // would wait for it forever.
                if Task.isCancelled { throw ChordStoreError(.cancelled, "the copy of \(name) was cancelled") }
            } catch {
                await copy.abandon()
                throw error
            }
            try await sink(.fileEnd(name, bytes: digest.count, digest: digest.value))
        }
    }

    /// The on-disk format and views layout this version writes (what a backup's files have).
    public static var dataFormat: (format: Int, viewsVersion: Int) {
        (Int(LMDBBackend.formatVersion), Int(LMDBBackend.viewsVersion))
    }

    /// Makes `target` (new, or an empty directory) a data directory holding the backup in
    /// `backup`: copies its files in, each checked against its size and ``BlockDigest``
    /// as it is copied and synced, under a temporary name; once both are whole, moves them
    /// into place (the log last); then opens the store there (its views are caught up with
    /// its log) and checks that its log ends at the manifest's event. With `move`, the
    /// files are moved instead of copied (same filesystem; for a staging directory whose
    /// files were checked as they arrived). `target` may hold the entries named in
    /// `ignoring` (a bootstrap's staging directory inside it). Returns the restored log's
    /// last event; `progress(done, total)` reports bytes copied. On failure, what was
    /// placed in `target` stays: the caller removes it.
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
        try BackupReceiver.prepareEmpty(target, ignoring: ignoring)
        try PrivateDirectory.create(target.appendingPathComponent("views"))
        let total = manifest.files.reduce(UInt64(0)) { $0 + $1.bytes }
        var done: UInt64 = 0
        var placed: [(partial: URL, destination: URL)] = []
        for file in manifest.files {
            let source = backup.appendingPathComponent(file.name), destination = target.appendingPathComponent(file.name)
            let partial = destination.appendingPathExtension("partial")
            if move {
                do {
                    try FileManager.default.moveItem(at: source, to: partial)
                } catch {
                    throw ChordStoreError(.unavailable, "cannot move \(file.name) into \(target.path): \(error.localizedDescription)")
                }
                done += file.bytes
                progress(done, total)
            } else {
                try copyChecked(file, from: source, to: partial) { done += $0; progress(done, total) }
            }
            try DurableFile.sync(partial.path)
            placed.append((partial, destination))
        }
        // Both files are whole: into place, the views first, the log last (a directory
        // with views and no log opens as a new store, and rebuilds them).
        for (partial, destination) in placed {
            do {
                if FileManager.default.fileExists(atPath: destination.path) { try FileManager.default.removeItem(at: destination) }
                try FileManager.default.moveItem(at: partial, to: destination)
            } catch {
                throw ChordStoreError(.unavailable, "cannot place \(destination.lastPathComponent) in \(target.path): \(error.localizedDescription)")
            }
            try DurableFile.sync(destination.deletingLastPathComponent().path)
        }
        let store = try ChordStore.open(at: target)
        defer { store.close() }
        let head = try store.head()
        guard head.sequence == manifest.logSequence, head.epoch == manifest.logEpoch,
              RecordCodec.hexDigits(head.checksum) == manifest.logChecksum else {
            throw ChordStoreError(
                .dataLoss,
                "the restored log ends at event \(head.sequence) of epoch \(head.epoch) (checksum \(RecordCodec.hexDigits(head.checksum))), the manifest says \(manifest.logSequence) of epoch \(manifest.logEpoch) (\(manifest.logChecksum))")
        }
        return head
    }

    /// Copies a backup's file to `destination` (which must not exist), checking its size
    /// and digest on the way; a damaged file leaves no copy.
    private static func copyChecked(
        _ file: BackupManifest.File, from source: URL, to destination: URL, progress: (UInt64) -> Void
    ) throws(ChordStoreError) {
        let writer = try SequentialFileWriter(creating: destination.path, mode: 0o600)
        var digest = BlockDigest()
        try readBlocks(source.path) { (block: UnsafeRawBufferPointer) throws(ChordStoreError) in
            try writer.append(block)
            digest.update(block)
            progress(UInt64(block.count))
        }
        try writer.finish()
        guard digest.count == file.bytes, RecordCodec.hexDigits(digest.value) == file.xxh64 else {
            try? FileManager.default.removeItem(at: destination)
            throw ChordStoreError(
                .dataLoss,
                "the backup's \(file.name) is damaged: \(digest.count) bytes with digest \(RecordCodec.hexDigits(digest.value)), the manifest says \(file.bytes) bytes with \(file.xxh64)")
        }
    }

    /// Calls `body` with the file at `path` in blocks of ``BlockDigest/blockSize``.
    private static func readBlocks(_ path: String, _ body: (UnsafeRawBufferPointer) throws(ChordStoreError) -> Void) throws(ChordStoreError) {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw ChordStoreError(.notFound, "the backup has no \(path)") }
            throw DurableFile.failure("open", path)
        }
        defer { _ = Glibc.close(fd) }
        var block = [UInt8](repeating: 0, count: BlockDigest.blockSize)
        while true {
            let count = block.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw DurableFile.failure("read", path) }
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
