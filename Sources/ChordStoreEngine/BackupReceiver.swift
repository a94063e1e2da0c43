import ChordStoreRecords
public import ChordStoreDomain
public import Foundation
import LMDB

/// Writes a backup stream (``BackupPart``s, from ``ChordStore/copyFiles(_:)`` here or on a
/// server) into a new directory: each file checked against its size and ``BlockDigest``,
/// synced, and at the end a manifest (``BackupManifest``) naming the copied log's last
/// event. Only the files of ``BackupFiles/all`` are taken, in their order: a stream
/// cannot write anywhere else.
///
/// ```swift
/// let receiver = try BackupReceiver(directory: URL(fileURLWithPath: "backup"))
/// try await store.copyFiles { try receiver.take($0) }
/// let manifest = try receiver.finish(node: "n1", started: start)
/// ```
public final class BackupReceiver {
    /// Where the files go.
    public let directory: URL
    /// Whether the views' file goes through the page cache, synced only by ``finish(node:started:)``.
    private let cachedViews: Bool
    private var open: (name: String, writer: SequentialFileWriter, digest: BlockDigest, cached: Bool)?
    private var files: [BackupManifest.File] = []
    /// Bytes written so far, over all files.
    public private(set) var bytesWritten: UInt64 = 0

    /// Receives into `directory`, which must not exist or be empty (it is created).
    ///
    /// With `cachedViews`, the views' file is written through the page cache and synced
    /// only by ``finish(node:started:)``, not once it is whole: it can then be read
    /// (``ChordStore/openViews(at:options:)``) at once, from memory, instead of after the
    /// disk took it: for a million events, a new follower's first read came after 2.5 to
    /// 3.7 s instead of 4.4 to 5.8 s (docs/REPLICATION.md, "Reads before the log"), for
    /// about a CPU-second more.
    public init(directory: URL, cachedViews: Bool = false) throws(ChordStoreError) {
        self.directory = directory
        self.cachedViews = cachedViews
        try Self.prepareEmpty(directory)
        try PrivateDirectory.create(directory.appendingPathComponent("views"))
    }

    /// Refuses a directory that exists and holds anything (or a file); returns whether it
    /// exists.
    @discardableResult
    static func checkEmpty(_ directory: URL, ignoring: Set<String> = []) throws(ChordStoreError) -> Bool {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory) else { return false }
        guard isDirectory.boolValue else { throw ChordStoreError(.alreadyExists, "\(directory.path) exists and is not a directory") }
        let entries = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { !ignoring.contains($0) }
        guard entries.isEmpty else {
            throw ChordStoreError(.alreadyExists, "\(directory.path) is not empty (it holds \(entries.sorted().prefix(3).joined(separator: ", "))\(entries.count > 3 ? ", …" : "")): give a new or empty directory")
        }
        return true
    }

    /// Refuses a directory that exists and holds anything; creates it otherwise.
    static func prepareEmpty(_ directory: URL, ignoring: Set<String> = []) throws(ChordStoreError) {
        if try checkEmpty(directory, ignoring: ignoring) { return }
        try PrivateDirectory.create(directory)
    }

    /// Takes the stream's next part.
    public func take(_ part: BackupPart) throws(ChordStoreError) {
        switch part {
        case .file(let name):
            guard open == nil, files.count < BackupFiles.all.count, name == BackupFiles.all[files.count] else {
                throw ChordStoreError(.dataLoss, "the backup stream sent file \(name.prefix(100)) out of order")
            }
            let cached = cachedViews && name == BackupFiles.views
            open = (name, try SequentialFileWriter(creating: directory.appendingPathComponent(name).path, bypassCache: !cached), BlockDigest(), cached)
        case .bytes(let bytes):
            try write(bytes)
        case .fileEnd(let name, let bytes, let digest):
            guard let current = open, current.name == name else {
                throw ChordStoreError(.dataLoss, "the backup stream ended file \(name.prefix(100)), which it had not begun")
            }
            open = nil
            guard current.digest.count == bytes, current.digest.value == digest else {
                throw ChordStoreError(
                    .dataLoss,
                    "\(name) arrived damaged: \(current.digest.count) bytes with digest \(RecordCodec.hexDigits(current.digest.value)), the sender sent \(bytes) bytes with \(RecordCodec.hexDigits(digest))")
            }
            try current.writer.finish(sync: !current.cached)  // a cached file is synced by finish(node:started:)
            files.append(BackupManifest.File(name: name, bytes: bytes, digest: digest))
        }
    }

    /// Takes the current file's next bytes (``BackupPart/bytes(_:)`` without building an
    /// array first).
    public func write(_ bytes: some ContiguousBytes) throws(ChordStoreError) {
        guard var current = open else { throw ChordStoreError(.dataLoss, "the backup stream sent bytes outside a file") }
        var failure: ChordStoreError?
        let count = bytes.withUnsafeBytes { buffer in
            do throws(ChordStoreError) {
                try current.writer.append(buffer)
                current.digest.update(buffer)
            } catch {
                failure = error
            }
            return buffer.count
        }
        if let failure { throw failure }
        open = current
        bytesWritten += UInt64(count)
    }

    /// Ends the stream: checks that every file came whole, reads the copied log's last
    /// event, and writes the manifest (synced, as is the directory).
    public func finish(node: String, started: Date) throws(ChordStoreError) -> BackupManifest {
        guard open == nil, files.map(\.name) == BackupFiles.all else {
            throw ChordStoreError(.dataLoss, "the backup stream ended before every file came whole (got \(files.map(\.name)))")
        }
        let head = try Self.logHead(of: directory)
        let manifest = BackupManifest(
            format: Int(LMDBBackend.formatVersion), viewsVersion: Int(LMDBBackend.viewsVersion), node: node,
            started: Instant(started).description, head: head, files: files)
        let url = directory.appendingPathComponent(BackupFiles.manifest)
        do {
            try manifest.encoded().write(to: url, options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
        } catch let error as ChordStoreError {
            throw error
        } catch {
            throw ChordStoreError(.unavailable, "cannot write \(url.path): \(error.localizedDescription)")
        }
        try DurableFile.sync(url.path)
        if cachedViews { try DurableFile.sync(directory.appendingPathComponent(BackupFiles.views).path) }
        try DurableFile.sync(directory.appendingPathComponent("views").path)
        try DurableFile.sync(directory.path)
        return manifest
    }

    /// The last event of the log file `data.mdb` in `directory`, opened read-only.
    static func logHead(of directory: URL) throws(ChordStoreError) -> LogPosition {
        do {
            var options = Environment.Options()
            options.readOnly = true
            options.maxDatabases = 32
            let env = try Environment(directory: directory, options: options)
            defer { env.close() }
            return try env.withReadTransaction { txn in
                let log = try txn.existingDatabase("log")
                let last = try txn.withCursor(log) { cursor in try cursor.last().map { (try StoreKeys.sequence($0.key), Array($0.value)) } }
                guard let (sequence, record) = last else { return LogPosition.start }
                return try record.withUnsafeBytes { bytes throws(ChordStoreError) in
                    let recorded = try RecordCodec.decode(bytes, sequence: sequence)
                    return LogPosition(sequence: sequence, epoch: recorded.epoch, checksum: RecordCodec.storedChecksum(bytes) ?? 0)
                }
            }
        } catch {
            let wrapped = ChordStoreError.wrapping(error)
            throw ChordStoreError(.dataLoss, "the log in \(directory.path) cannot be read: \(wrapped.message)")
        }
    }
}
