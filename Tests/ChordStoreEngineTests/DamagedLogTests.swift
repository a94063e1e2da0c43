import ChordStoreRecords
import ChordStoreDomain
import ChordStoreEngine
import Foundation
import LMDB
import TestSupport
import Testing

/// Damaged or impossible stored values: a flipped byte in a log record, an epoch no
/// member can hold. The store opens, says what is wrong, and never serves the damage.
@Suite("Damaged and impossible stored values")
struct DamagedLogTests {
    /// A store of 40 chordsets, each added by one event whose record holds `marker-N-end`.
    private func makeStore() async throws -> URL {
        let directory = temporaryDirectory()
        let store = try ChordStore.open(at: directory)
        for i in 1...40 { _ = try await store.add("chordset number \(i) marker-\(i)-end") }
        store.close()
        return directory
    }

    @Test("a flipped byte in a record: the store opens, refuses writes with DATA_LOSS naming the event, and never serves the record")
    func flippedByte() async throws {
        let directory = try await makeStore()
        #expect(try damage("marker-17-end", in: directory.appendingPathComponent("data.mdb")) > 0)
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        let refusal = try #require(store.writeRefusal, "the store opened as if sound")
        #expect(refusal.code == .dataLoss)
        #expect(refusal.message.contains("event 17"), "\(refusal.message)")

        // Reading the log (ReadLog, the feed, replication) stops at the damaged record.
        var delivered: [UInt64] = []
        let error = #expect(throws: ChordStoreError.self) {
            try store.forEachRecord(from: 1) { sequence, _ in
                delivered.append(sequence)
                return true
            }
        }
        #expect(error?.code == .dataLoss)
        #expect(error?.message.contains("event 17") == true, "\(String(describing: error))")
        #expect(error?.message.contains("marker") == false, "the error shows the record's bytes")
        #expect(delivered == Array(1...16))
        #expect(throws: ChordStoreError.self) { _ = try store.events(from: 17, limit: 1) }
        #expect(try store.events(from: 18, limit: 100).count == 23)

        // Its chordset's history, and writes, are refused; verify names the event.
        let damagedID = try #require(try store.chordsets().first { $0.title.hasSuffix("marker-17-end") }?.id)
        #expect(throws: ChordStoreError.self) { _ = try store.history(chordset: damagedID) }
        let write = await #expect(throws: ChordStoreError.self) { _ = try await store.add("after the damage") }
        #expect(write?.code == .dataLoss)
        #expect(try store.verify().sequence == 17)
    }

    @Test("a record whose checksum holds but which holds no event: a rebuild stops there with DATA_LOSS naming it, nothing of it folded")
    func recordWithoutEvent() async throws {
        let directory = try await makeStore()
        do {
            // Event 20 replaced by a record of its sequence and log position only, its checksum
            // chained to event 19's: the chain holds up to it, and the replay's decoding refuses it.
            let env = try Environment(directory: directory)
            let log = try env.openDatabase("log")
            try env.withWriteTransaction { txn in
                let previous = try #require(try txn.get(log, key: StoreKeys.sequence(19))).withUnsafeBytes { try RecordCodec.decode($0, sequence: 19) }
                var record: [UInt8] = [0x08, 20, 0x90, 0x01, 20]  // field 1 (sequence) 20, field 18 (log sequence) 20
                let checksum = XXHash64.hash(record, seed: previous.checksum)
                record.append(RecordCodec.checksumTag)
                withUnsafeBytes(of: checksum.littleEndian) { record.append(contentsOf: $0) }
                try txn.put(log, key: StoreKeys.sequence(20), value: record)
            }
            env.close()
        }
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        let error = await #expect(throws: ChordStoreError.self) { try await store.rebuild() }
        #expect(error?.code == .dataLoss)
        // The decoder's refusal: nothing of the record that failed to decode reached the fold
        // (an empty event would fail there first, as event 0).
        #expect(error?.message.contains("event 20 is damaged: a record has no event") == true, "\(String(describing: error))")
    }

    @Test("an epoch above the largest is refused, and one persisted by an older version is clamped, not a crash")
    func impossibleEpoch() async throws {
        let directory = temporaryDirectory()
        do {
            let store = try ChordStore.open(at: directory)
            let refused = await #expect(throws: ChordStoreError.self) { try await store.adoptEpoch(.max) }
            #expect(refused?.code == .invalidArgument)
            #expect(try await store.adoptEpoch(LogPosition.maxEpoch) == LogPosition.maxEpoch)
            store.close()
        }
        // What an older version could leave: the epoch 2^64 - 1, persisted.
        do {
            let env = try Environment(directory: directory)
            let meta = try env.openDatabase("meta")
            try env.withWriteTransaction { txn in
                try txn.put(meta, key: Array("epoch".utf8), value: withUnsafeBytes(of: UInt64.max.bigEndian) { Array($0) })
            }
            env.close()
        }
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        #expect(store.epoch == LogPosition.maxEpoch)
        let recorded = try await store.execute(.addChordset(AddChordset(title: "at the largest epoch")))
        #expect(recorded.epoch == LogPosition.maxEpoch)
    }

    @Test("a record missing from the middle of the log ends a read with DATA_LOSS naming it, from before it or right after it")
    func missingRecord() async throws {
        let directory = try await makeStore()
        do {
            let env = try Environment(directory: directory)
            let log = try env.openDatabase("log")
            try env.withWriteTransaction { txn in
                _ = try txn.delete(log, key: withUnsafeBytes(of: UInt64(10).bigEndian) { Array($0) })
            }
            env.close()
        }
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        #expect(store.writeRefusal?.code == .dataLoss)
        for start: UInt64 in [1, 11] {
            var delivered: [UInt64] = []
            let error = #expect(throws: ChordStoreError.self) {
                try store.forEachRecord(from: start) { sequence, _ in
                    delivered.append(sequence)
                    return true
                }
            }
            #expect(error?.message.contains("event 10 is missing") == true, "from \(start): \(String(describing: error))")
            #expect(delivered == (start == 1 ? Array(1...9) : []))
        }
    }
}

