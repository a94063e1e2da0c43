import ChordStoreRecords
import ChordStoreDomain
@testable import ChordStoreEngine
import ChordStoreProto
import SwiftProtobuf
import Foundation
import LMDB
import Synchronization
import Testing

/// Online backups: a copy taken while writes go on restores to a store whose log is the
/// source's up to the copy's last event, byte for byte, and which passes verify; a
/// damaged or partial backup, or a target in use, is refused.
@Suite("Backup and restore")
struct BackupTests {
    /// Copies `store`'s files into a new directory; returns it and the manifest.
    static func backup(_ store: ChordStore) async throws -> (URL, BackupManifest) {
        let directory = temporaryDirectory()
        let receiver = try BackupReceiver(directory: directory)
        try await store.copyFiles { try receiver.take($0) }
        return (directory, try receiver.finish(node: "test", started: Date()))
    }

    /// The log's records up to `sequence`, as stored.
    static func records(_ store: ChordStore, through sequence: UInt64) throws -> [[UInt8]] {
        var records: [[UInt8]] = []
        try store.forEachLogRecord(from: 1) { position, record in
            guard position <= sequence else { return false }
            records.append(Array(record))
            return true
        }
        return records
    }

    @Test("a backup taken during 4 writers' adds (400 each at most) restores to the source's log up to its last event, byte for byte, and passes verify")
    func backupDuringWrites() async throws {
        let source = try ChordStore.open(at: temporaryDirectory())
        defer { source.close() }
        _ = try await source.createStore("other")
        for index in 0..<200 { _ = try await source.add("before \(index)") }
        let stop = StopFlag()
        // Each writer's adds are announced: the copy starts once 8 are in (a fixed sleep
        // was not enough under a loaded full run, where no add had committed yet).
        let (added, announce) = AsyncStream<Void>.makeStream()
        let writers = Task {
            defer { announce.finish() }  // a writer that fails ends the wait below too
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<4 {
                    group.addTask {
                        var index = 0
                        while !stop.isRaised, index < 400 {
                            let context = CommandContext(store: writer % 2 == 0 ? StoreName.default : "other")
                            try await source.execute(.addChordset(AddChordset(title: "during \(writer)-\(index)")), context: context)
                            announce.yield()
                            index += 1
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        var announced = 0
        for await _ in added {
            announced += 1
            if announced == 8 { break }
        }
        let (directory, manifest) = try await Self.backup(source)
        stop.raise()
        try await writers.value
        #expect(manifest.logSequence > 208, "writes went on before the copy's log was read")
        #expect(manifest.files.map(\.name) == BackupFiles.all)

        let target = temporaryDirectory()
        let head = try ChordStore.restore(backup: directory, into: target)
        #expect(head.sequence == manifest.logSequence)
        let restored = try ChordStore.open(at: target)
        defer { restored.close() }
        #expect(try Self.records(restored, through: head.sequence) == Self.records(source, through: head.sequence))
        #expect(try restored.lastLogSequence() == manifest.logSequence)
        let report = try restored.verify()
        #expect(report.isSound, "\(String(describing: report.problem))")
        #expect(try restored.profile().chordsets + restored.profile(store: "other").chordsets == Int(manifest.logSequence) - 1)
        // The restored store takes writes, after the copied log.
        _ = try await restored.add("after the restore")
        #expect(try restored.lastLogSequence() == manifest.logSequence + 1)
    }

    @Test("restore refuses a non-empty target, a damaged file, a missing file and a directory that is no backup, and writes nothing")
    func refusals() async throws {
        let source = try ChordStore.open(at: temporaryDirectory())
        for index in 0..<20 { _ = try await source.add("\(index)") }
        let (directory, _) = try await Self.backup(source)
        source.close()

        let busy = temporaryDirectory()
        try FileManager.default.createDirectory(at: busy, withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: busy.appendingPathComponent("notes.txt"))
        #expect(throws: ChordStoreError.self) { try ChordStore.restore(backup: directory, into: busy) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: busy.path) == ["notes.txt"])

        let damaged = temporaryDirectory()
        try FileManager.default.copyItem(at: directory, to: damaged)
        let handle = try FileHandle(forUpdating: damaged.appendingPathComponent(BackupFiles.log))
        try handle.seek(toOffset: 4_100)
        try handle.write(contentsOf: Data([0xFF]))
        try handle.close()
        let target = temporaryDirectory()
        let error = #expect(throws: ChordStoreError.self) { try ChordStore.restore(backup: damaged, into: target) }
        #expect(error?.code == .dataLoss && error?.message.contains("damaged") == true, "\(String(describing: error))")
        #expect(!FileManager.default.fileExists(atPath: target.appendingPathComponent(BackupFiles.log).path))

        try FileManager.default.removeItem(at: damaged.appendingPathComponent(BackupFiles.views))
        #expect(throws: ChordStoreError.self) { try ChordStore.restore(backup: damaged, into: temporaryDirectory()) }
        let missing = #expect(throws: ChordStoreError.self) { try ChordStore.restore(backup: temporaryDirectory(), into: temporaryDirectory()) }
        #expect(missing?.code == .notFound)
    }

    @Test("a stream that sends a file out of order, a damaged file or too few files is refused by the receiver")
    func receiverRefusals() throws {
        let outOfOrder = try BackupReceiver(directory: temporaryDirectory())
        #expect(throws: ChordStoreError.self) { try outOfOrder.take(.file("../escape")) }
        #expect(throws: ChordStoreError.self) { try outOfOrder.take(.file(BackupFiles.log)) }

        let damaged = try BackupReceiver(directory: temporaryDirectory())
        try damaged.take(.file(BackupFiles.views))
        try damaged.take(.bytes([1, 2, 3]))
        var digest = BlockDigest()
        digest.update([1, 2, 4])
        let refused = #expect(throws: ChordStoreError.self) { try damaged.take(.fileEnd(BackupFiles.views, bytes: 3, digest: digest.value)) }
        #expect(refused?.code == .dataLoss)

        let short = try BackupReceiver(directory: temporaryDirectory())
        #expect(throws: ChordStoreError.self) { _ = try short.finish(node: "x", started: Date()) }
    }

    @Test("the block digest does not depend on how the bytes were cut")
    func digestIgnoresCuts() {
        // Two blocks and a piece, filled eight bytes at a time (a debug build is slow: the
        // test must not hold one of the test process's two task threads for long).
        var generator = SplitMix64(seed: 7)
        var bytes = [UInt8](repeating: 0, count: 2 * BlockDigest.blockSize + 12_345)
        bytes.withUnsafeMutableBytes { buffer in
            for offset in stride(from: 0, to: buffer.count - 7, by: 8) { buffer.storeBytes(of: generator.next(), toByteOffset: offset, as: UInt64.self) }
        }
        var whole = BlockDigest()
        whole.update(bytes)
        for cut in [4_093, 65_536, BlockDigest.blockSize - 1, BlockDigest.blockSize, BlockDigest.blockSize + 7] {
            var pieces = BlockDigest()
            var start = 0
            while start < bytes.count {
                let end = min(start + cut, bytes.count)
                pieces.update(Array(bytes[start..<end]))
                start = end
            }
            #expect(pieces.value == whole.value && pieces.count == whole.count, "cut at \(cut)")
        }
        var changed = bytes
        changed[BlockDigest.blockSize + 3] ^= 1
        var other = BlockDigest()
        other.update(changed)
        #expect(other.value != whole.value)
    }

    /// A store (without fsync) of 4,000 chordsets, added by 8 callers: files of several
    /// blocks of a copy.
    private static func storeOfSeveralBlocks() async throws -> ChordStore {
        var options = ChordStore.Options()
        options.unsafeNoSync = true
        let store = try ChordStore.open(at: temporaryDirectory(), options: options)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<8 {
                    group.addTask { for index in stride(from: worker, to: 4_000, by: 8) { _ = try await store.add("c\(index)") } }
                }
                try await group.waitForAll()
            }
        } catch {
            store.close()
            throw error
        }
        return store
    }

    @Test("a copy whose consumer stops after any number of blocks is abandoned cleanly, and the store goes on")
    func abandonedCopies() async throws {
        let store = try await Self.storeOfSeveralBlocks()
        defer { store.close() }
        struct Stop: Error {}
        // Stopping at the first block leaves both read-ahead blocks unconsumed; later
        // stops leave one or none.
        for stopAfter in [1, 1, 2, 3, 1, 2] {
            var blocks = 0
            await #expect(throws: Stop.self) {
                try await store.copyFiles { part in
                    guard case .bytes = part else { return }
                    blocks += 1
                    if blocks == stopAfter { throw Stop() }
                }
            }
        }
        _ = try await store.add("after the abandoned copies")
        #expect(try store.verify().isSound)
    }

    @Test("a copy whose task is cancelled (its call ended) throws CANCELLED and ends its LMDB copies: none is taken for a whole file, none is left running")
    func cancelledCopyEnds() async throws {
        let store = try await Self.storeOfSeveralBlocks()
        defer { store.close() }
        let lmdb = try #require(store.backend as? LMDBBackend)
        for stopAfter in [1, 2] {
            let copy = Task {
                var blocks = 0
                try await store.copyFiles { part in
                    guard case .bytes = part else { return }
                    blocks += 1
                    if blocks == stopAfter { withUnsafeCurrentTask { $0?.cancel() } }
                }
            }
            let error = await #expect(throws: ChordStoreError.self) { try await copy.value }
            #expect(error?.code == .cancelled)
            #expect(lmdb.logEnv.runningCopies == 0 && lmdb.viewsEnv.runningCopies == 0)
        }
        _ = try await store.add("after the cancelled copies")
        #expect(try store.verify().isSound)
    }

    @Test("a data chunk is read in place: its bytes for data alone, nil for any other chunk, an error when malformed")
    func dataChunkReading() throws {
        for count in [1, 128, 16_384, BlockDigest.blockSize] {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let encoded: [UInt8] = try Chordstore_V1_BackupChunk.with { $0.data = Data(bytes) }.serializedBytes()
            let read = try encoded.withUnsafeBytes { chunk in try BackupPart.dataField(of: chunk).map { Array($0) } }
            #expect(read == bytes, "\(count) bytes")
        }
        let others: [Chordstore_V1_BackupChunk] = [
            .with { $0.file = .with { $0.name = BackupFiles.log } },
            .with { $0.fileEnd = .with { $0.name = BackupFiles.log; $0.bytes = 3; $0.digest = 9 } },
            .with { $0.header = .with { $0.node = "n1" } },
            Chordstore_V1_BackupChunk(),
        ]
        for other in others {
            let encoded: [UInt8] = try other.serializedBytes()
            #expect(try encoded.withUnsafeBytes { try BackupPart.dataField(of: $0) } == nil)
        }
        // Data followed by another field is not data alone: SwiftProtobuf decides.
        let twoFields: [UInt8] = try Chordstore_V1_BackupChunk.with { $0.data = Data([1, 2, 3]) }.serializedBytes() + [0x12, 0x00]
        #expect(try twoFields.withUnsafeBytes { try BackupPart.dataField(of: $0) } == nil)
        // A length past the end.
        #expect(throws: ChordStoreError.self) { try [UInt8]([0x1A, 0x05, 1, 2]).withUnsafeBytes { try BackupPart.dataField(of: $0) } }
    }

    @Test("a store in memory has no files to copy")
    func inMemory() async throws {
        let store = ChordStore.inMemory()
        await #expect(throws: ChordStoreError.self) { try await store.copyFiles { _ in } }
    }
}

/// Tells writers to stop.
final class StopFlag: Sendable {
    private let raised = Atomic(false)
    var isRaised: Bool { raised.load(ordering: .relaxed) }
    func raise() { raised.store(true, ordering: .relaxed) }
}
