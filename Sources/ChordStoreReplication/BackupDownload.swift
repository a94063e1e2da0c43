import ChordStoreAPI
@_spi(Raw) public import ChordStoreClient
import ChordStoreDomain
import ChordStoreWire
public import ChordStoreEngine
import ChordStoreProto
public import Foundation
import SwiftProtobuf

/// Receives a server's `Backup` stream into a new directory (``BackupReceiver``): what
/// `chordstore backup` does, and what a new follower bootstraps from.
public enum BackupDownload {
    private static let notAChunk = ChordStoreError(.dataLoss, "a chunk of the backup stream is not a BackupChunk")

    /// Copies the files of the server `client` reaches into `directory` (new or empty)
    /// and writes their manifest; `progress(received, expected)` reports bytes (expected
    /// is an estimate: the compacted copy is usually smaller), and `arrived(name)` each
    /// file of ``BackupFiles/all`` once it is whole and checked, before the next one is
    /// taken. Each file is synced as it ends; with `cachedViews`, the views' file is
    /// written through the page cache instead, to be read at once, and synced at the end
    /// (``BackupReceiver/init(directory:cachedViews:)``). On failure the files written so
    /// far stay: remove `directory`.
    public static func download(
        from client: Client, into directory: URL, cachedViews: Bool = false, progress: (UInt64, UInt64) -> Void = { _, _ in },
        arrived: (String) async -> Void = { _ in }
    ) async throws -> BackupManifest {
        let receiver = try BackupReceiver(directory: directory, cachedViews: cachedViews)
        let stream = try await client.stream(.backup, Chordstore_V1_BackupRequest(), as: Chordstore_V1_BackupChunk.self)
        var header: Chordstore_V1_BackupHeader?
        var chunks = stream.makeAsyncIterator()
        while let payload = try await chunks.nextPayload() {
            // Most chunks are a file's bytes: written from the reply as it arrived.
            let written = try payload.withUnsafeBytes { chunk throws(ChordStoreError) -> Bool in
                let data: UnsafeRawBufferPointer?
                do {
                    data = try BackupPart.dataField(of: chunk)
                } catch {
                    throw Self.notAChunk
                }
                guard let data else { return false }
                try receiver.write(data)
                return true
            }
            if written {
                progress(receiver.bytesWritten, max(receiver.bytesWritten, header?.estimatedBytes ?? 0))
                continue
            }
            let chunk: Chordstore_V1_BackupChunk
            do {
                chunk = try Chordstore_V1_BackupChunk(serializedBytes: payload)
            } catch {
                throw Self.notAChunk
            }
            switch chunk.part {
            case .header(let first):
                guard header == nil else { throw ChordStoreError(.dataLoss, "the backup stream sent a second header") }
                guard first.format <= ChordStore.dataFormat.format else {
                    throw ChordStoreError(
                        .failedPrecondition,
                        "the server's data has format \(first.format), newer than this chordstore reads (\(ChordStore.dataFormat.format))")
                }
                header = first
            case .file(let file):
                try receiver.take(.file(file.name))
            case .data(let data):
                try receiver.write(data)
                progress(receiver.bytesWritten, max(receiver.bytesWritten, header?.estimatedBytes ?? 0))
            case .fileEnd(let end):
                try receiver.take(.fileEnd(end.name, bytes: end.bytes, digest: end.digest))
                await arrived(end.name)
            case nil:
                throw ChordStoreError(.dataLoss, "the backup stream sent a chunk of no known kind")
            }
        }
        guard let header else { throw ChordStoreError(.dataLoss, "the backup stream sent no header") }
        return try receiver.finish(node: header.node, started: header.started.date)
    }
}
