public import ChordStoreRecords
public import ChordStoreDomain
public import Foundation

/// One piece of a backup stream (``ChordStore/copyFiles(_:)``): the data directory's files
/// one after the other, each announced, sent in blocks, and closed with its size and
/// ``BlockDigest``.
public enum BackupPart: Sendable, Hashable {
    /// A file begins: its path in the data directory (`views/data.mdb`, then `data.mdb`).
    case file(String)
    /// The file's next bytes.
    case bytes([UInt8])
    /// The file ended: its size and ``BlockDigest``.
    case fileEnd(String, bytes: UInt64, digest: UInt64)
}

extension BackupPart {
    /// `BackupChunk.data`'s field number: a data chunk is a message of this field alone.
    public static let dataFieldNumber: UInt8 = 3

    /// The bytes of a `BackupChunk` that holds only `data` (field 3), as a server writes
    /// it (the tag, the length, the bytes), read in place (valid while `chunk` is); `nil`
    /// for any other chunk (decode it with SwiftProtobuf). Throws `dataLoss` for a
    /// malformed chunk.
    public static func dataField(of chunk: UnsafeRawBufferPointer) throws(ChordStoreError) -> UnsafeRawBufferPointer? {
        var reader = ProtoReader(chunk)
        guard let (field, wireType) = try reader.next(), field == Int(dataFieldNumber), wireType == 2 else { return nil }
        let bytes = try reader.lengthDelimited()
        return reader.isAtEnd ? bytes : nil
    }
}

/// The files of a backup, in the order they are copied (the views before the log: the
/// copy of the log then holds at least every event the views' copy reflects).
public enum BackupFiles {
    /// The views' data file, relative to the data directory.
    public static let views = "views/data.mdb"
    /// The log's data file.
    public static let log = "data.mdb"
    /// Both, in copy order.
    public static let all = [views, log]
    /// The manifest a backup directory holds beside them.
    public static let manifest = "chordstore-backup.json"
}

/// `chordstore-backup.json`: what a backup directory holds and how to check it.
public struct BackupManifest: Codable, Sendable, Hashable {
    /// One copied file.
    public struct File: Codable, Sendable, Hashable {
        /// Its path in the data directory.
        public var name: String
        /// Its size in bytes.
        public var bytes: UInt64
        /// Its ``BlockDigest``, 16 hexadecimal digits.
        public var xxh64: String

        /// Describes a file.
        public init(name: String, bytes: UInt64, digest: UInt64) {
            self.name = name
            self.bytes = bytes
            self.xxh64 = RecordCodec.hexDigits(digest)
        }
    }

    /// The manifest's own format (1).
    public var backupFormat = 1
    /// The data directory's on-disk format the files have.
    public var format: Int
    /// The layout of the views the files have.
    public var viewsVersion: Int
    /// The node the backup was taken from.
    public var node: String
    /// When the copy began (ISO 8601, UTC).
    public var started: String
    /// The copied log's last event: its position, epoch and checksum (16 hex digits).
    public var logSequence: UInt64
    /// The epoch of that event.
    public var logEpoch: UInt64
    /// The checksum of that event (the whole log's hash chain).
    public var logChecksum: String
    /// The files, in copy order.
    public var files: [File]

    /// The manifest's current format.
    public static let currentFormat = 1

    /// Creates a manifest.
    public init(format: Int, viewsVersion: Int, node: String, started: String, head: LogPosition, files: [File]) {
        self.format = format
        self.viewsVersion = viewsVersion
        self.node = node
        self.started = started
        self.logSequence = head.sequence
        self.logEpoch = head.epoch
        self.logChecksum = RecordCodec.hexDigits(head.checksum)
        self.files = files
    }

    /// Reads `chordstore-backup.json` in `directory`.
    public static func read(from directory: URL) throws(ChordStoreError) -> BackupManifest {
        let url = directory.appendingPathComponent(BackupFiles.manifest)
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw ChordStoreError(.notFound, "\(directory.path) is not a chordstore backup: it has no \(BackupFiles.manifest)")
        }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        do {
            let manifest = try decoder.decode(BackupManifest.self, from: data)
            guard manifest.backupFormat <= currentFormat else {
                throw ChordStoreError(.failedPrecondition, "\(url.path) has backup format \(manifest.backupFormat), newer than this chordstore reads (\(currentFormat))")
            }
            return manifest
        } catch let error as ChordStoreError {
            throw error
        } catch {
            throw ChordStoreError(.invalidArgument, "\(url.path) is not a backup manifest: \(error)")
        }
    }

    /// The manifest as JSON (snake_case keys, sorted, one line per key).
    public func encoded() throws(ChordStoreError) -> Data {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        do {
            return try encoder.encode(self) + Data("\n".utf8)
        } catch {
            throw ChordStoreError(.internal, "cannot encode the backup manifest: \(error)")
        }
    }
}
