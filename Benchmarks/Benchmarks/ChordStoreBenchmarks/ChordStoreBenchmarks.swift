import Benchmark
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreWire
import Foundation
import NIOCore

/// The hot paths of a write and a read, each alone: the numbers to watch (time and
/// mallocs per operation) when changing one of them.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .throughput],
        warmupIterations: 100,
        maxDuration: .seconds(2),
        maxIterations: 100_000)

    var g = SplitMix64(seed: 1)
    let chordset = Chordset(
        id: UUID.version7(at: .now, using: &g), title: "Verse in E minor", creationDate: .now, index: 3,
        chords: (0..<8).map { Chord(id: UUID.version7(at: .now, using: &g), position: $0, bpm: 120, color: .random(using: &g)) })
    let added = RecordedEvent(
        sequence: 42, epoch: 1, timestamp: .now, session: "connection-7", commandID: "8C1D6E0A-2F4B-4E55-9A61-0D3B7C2E9F10",
        event: .chordsetAdded(chordset), checksum: 0)
    let renamed = RecordedEvent(
        sequence: 43, epoch: 1, timestamp: .now, session: "connection-7", commandID: "",
        event: .chordsetRenamed(id: chordset.id, title: "Chorus", previousTitle: "Verse"), checksum: 0)
    let addedRecord = RecordCodec.encode(added, previousChecksum: 7).bytes

    Benchmark("event encode: chordset added (record + hash chain)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(RecordCodec.encode(added, previousChecksum: 7)) }
    }
    Benchmark("event encode: rename") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(RecordCodec.encode(renamed, previousChecksum: 7)) }
    }
    Benchmark("event decode: chordset added") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try addedRecord.withUnsafeBytes { try RecordCodec.decode($0, sequence: 42) })
        }
    }

    var frame = ByteBuffer()
    frame.writeInteger(UInt32(addedRecord.count))
    frame.writeBytes(addedRecord)
    Benchmark("frame decode: one 4-byte-length frame") { benchmark in
        var decoder = FrameDecoder()
        for _ in benchmark.scaledIterations {
            var input = frame
            blackHole(try decoder.decode(buffer: &input))
        }
    }

    Benchmark("frame encode: the reply to an add (CommandReply around the record, framed)") { benchmark in
        var buffer = ByteBufferAllocator().buffer(capacity: 1_024)
        for i in benchmark.scaledIterations {
            buffer.clear()
            try ReplyFrame.write(callID: UInt64(i), payload: .field(1, addedRecord[...]), status: .ok, into: &buffer)
            blackHole(buffer)
        }
    }

    Benchmark("fold: add then rename, in memory") { benchmark in
        for i in benchmark.scaledIterations {
            var state = InMemoryState()
            var copy = chordset
            copy.index = 0
            try Fold.apply(.chordsetAdded(copy), sequence: UInt64(i), to: &state)
            try Fold.apply(.chordsetRenamed(id: copy.id, title: "Chorus", previousTitle: copy.title), sequence: UInt64(i) + 1, to: &state)
            blackHole(state)
        }
    }

    Benchmark("projection update: rename through an in-memory store (decide, encode, fold, undo stacks)",
              configuration: .init(maxDuration: .seconds(2))) { benchmark in
        let store = ChordStore.inMemory()
        let recorded = try await store.execute(.addChordset(AddChordset(title: "x")))
        guard case .chordsetAdded(let target) = recorded.event else { return }
        benchmark.startMeasurement()
        for i in benchmark.scaledIterations {
            blackHole(try await store.execute(.renameChordset(id: target.id, title: "t\(i)")))
        }
        benchmark.stopMeasurement()
        store.close()
    }

    Benchmark("group commit: 64 concurrent adds, LMDB without fsync (per batch of 64)",
              configuration: .init(maxDuration: .seconds(3), maxIterations: 2_000)) { benchmark in
        var options = ChordStore.Options()
        options.unsafeNoSync = true
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("chordstore-micro-\(UUID().uuidString)")
        let store = try ChordStore.open(at: directory, options: options)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<64 { group.addTask { try await store.execute(.addChordset(AddChordset(title: "b\(i)"))) } }
                try await group.waitForAll()
            }
        }
        benchmark.stopMeasurement()
        store.close()
        try? FileManager.default.removeItem(at: directory)
    }
}
