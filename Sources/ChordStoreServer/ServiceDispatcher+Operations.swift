import ChordStoreAPI
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf

extension ServiceDispatcher {
    /// Answers `Backup`: a header, then the store's files as LMDB's compacting copies
    /// (``ChordStoreEngine/ChordStore/copyFiles(_:)``), each file announced, sent in
    /// chunks that fit a frame, and closed with its size and digest. At most
    /// ``maxBackups`` run at once.
    func backup(payload: RequestPayload, emit: MethodHandler.Emit) async throws(WireError) {
        do {
            _ = try parse(Chordstore_V1_BackupRequest.self, payload, .backup)
            if let absence = store.logAbsence { throw absence }  // before the header: nothing to copy yet
            guard backups.enter() else {
                throw WireError(.resourceExhausted, "\(Self.maxBackups) backups are running, the most at once; retry when one ends")
            }
            defer { backups.leave() }
            let format = ChordStore.dataFormat
            try await emit([.bytes(try Chordstore_V1_BackupChunk.with {
                $0.header = .with {
                    $0.format = UInt32(format.format)
                    $0.viewsVersion = UInt32(format.viewsVersion)
                    $0.node = node
                    $0.started = Google_Protobuf_Timestamp(date: Date())
                    $0.logSequence = (try? store.lastLogSequence()) ?? 0
                    if let usage = store.storageUsage { $0.estimatedBytes = UInt64(usage.logBytes + usage.viewsBytes) }
                }
            }.serializedBytes())])
            // A chunk and its framing fit in a frame of the server's (and the client's) limit.
            let chunk = min(BlockDigest.blockSize, limits.maxFrameSize - 256)
            try await store.copyFiles { part in
                switch part {
                case .file(let name):
                    try await emit([.bytes(try Chordstore_V1_BackupChunk.with { $0.file = .with { $0.name = name } }.serializedBytes())])
                case .bytes(let bytes):
                    var start = 0
                    while start < bytes.count {
                        let end = min(start + chunk, bytes.count)
                        // BackupChunk.data, written into the frame from the block itself.
                        try await emit([.field(BackupPart.dataFieldNumber, bytes[start..<end])])
                        start = end
                    }
                case .fileEnd(let name, let size, let digest):
                    try await emit([.bytes(try Chordstore_V1_BackupChunk.with {
                        $0.fileEnd = .with {
                            $0.name = name
                            $0.bytes = size
                            $0.digest = digest
                        }
                    }.serializedBytes())])
                }
            }
        } catch {
            throw WireError.wrapping(error)
        }
    }

    /// Answers `ImportEvents`: appends the exported events to the call's store (see
    /// ``ChordStoreEngine/ChordStore/importEvents(_:store:)``).
    func importEvents(_ payload: RequestPayload, _ context: CallContext) async throws -> [UInt8] {
        let request = try parse(Chordstore_V1_ImportEventsRequest.self, payload, .importEvents)
        try checkLeading()
        guard request.events.count <= Self.maxImportBatch else {
            throw WireError(.invalidArgument, "\(request.events.count) events in one ImportEvents call; at most \(Self.maxImportBatch)")
        }
        let events = try request.events.map { envelope throws(WireError) -> RecordedEvent in
            do throws(ChordStoreError) {
                return try RecordedEvent(envelope: envelope)
            } catch {
                throw WireError(.invalidArgument, "event \(envelope.sequence) of the batch: \(error.message)")
            }
        }
        let imported: (sequence: UInt64, logSequence: UInt64)
        do {
            imported = try await store.importEvents(events, store: context.store)
        } catch {
            throw Self.commandError(error, leader: replication)
        }
        try await awaitDurability(.default, of: imported.logSequence)
        return try Chordstore_V1_ImportEventsReply.with {
            $0.lastSequence = imported.sequence
            $0.logSequence = imported.logSequence
        }.serializedBytes()
    }

    /// Most events in one `ImportEvents` call.
    static let maxImportBatch = 1_000
}
