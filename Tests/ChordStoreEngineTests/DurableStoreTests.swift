import ChordStoreRecords
import ChordStoreDomain
import ChordStoreEngine
import Foundation
import LMDB
import Testing
import TestSupport

/// What only the LMDB engine promises: data survives closing, the map grows, damage is
/// found, dropped views are rebuilt, and a directory has one owner.
@Suite("Durable store")
struct DurableStoreTests {
    @Test("everything committed is there after closing and reopening")
    func reopen() async throws {
        let directory = temporaryDirectory()
        var expected: StateSnapshot
        do {
            let store = try ChordStore.open(at: directory)
            for i in 0..<10 { _ = try await store.add("c\(i)") }
            let third = try store.chordsets()[2]
            try await store.execute(.deleteChordset(id: third.id))
            try await store.execute(.setControlsChord(SetControlsChord(bpm: 80, color: ChordColor(hue: 0, purity: 0, brightness: 1))))
            expected = try store.liveSnapshot()
            store.close()
        }
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        #expect(try store.liveSnapshot() == expected)
        #expect(try store.profile().lastSequence == 12)
        let next = try await store.add("after reopen")
        #expect(try store.events(from: 13).first?.event == .chordsetAdded(next))
        let report = try store.verify(); #expect(report.isSound, "\(String(describing: report.problem))")
    }

    @Test("a store started with a 64 KiB map grows it instead of failing (views, then live state)", arguments: [EngineKind.lmdb, .live])
    func mapGrows(kind: EngineKind) async throws {
        try await onOwnThread {
            let store = try kind.makeStore { $0.initialMapSize = 64 << 10 }
            defer { store.close() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<2_000 { group.addTask { _ = try await store.add("grow \(i)") } }
                try await group.waitForAll()
            }
            #expect(try store.profile().chordsets == 2_000)
            #expect(try store.verify().isSound)
        }
    }

    @Test("a second open of a directory in use is refused with UNAVAILABLE naming the owner's pid")
    func directoryInUse() throws {
        let directory = temporaryDirectory()
        let store = try ChordStore.open(at: directory)
        do {
            _ = try ChordStore.open(at: directory)
            Issue.record("the directory was opened twice")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("in use by another process (pid \(ProcessInfo.processInfo.processIdentifier))"))
        }
        store.close()
        let again = try ChordStore.open(at: directory)
        again.close()
    }

    @Test("one flipped byte in a stored event is found by verify, naming its sequence number", arguments: [0, 5, 40])
    func flippedByte(offsetFromTrailer: Int) async throws {
        let directory = temporaryDirectory()
        let target: RecordedEvent
        do {
            let store = try ChordStore.open(at: directory)
            for i in 0..<30 { _ = try await store.add("event \(i)") }
            target = try #require(try store.events(from: 17, limit: 1).first)
            store.close()
        }
        // The 9-byte trailer (0x79 + checksum) identifies the record's bytes in the file;
        // flip a byte `offsetFromTrailer` bytes before it (0: in the checksum itself).
        let file = directory.appendingPathComponent("data.mdb")
        var bytes = try Data(contentsOf: file)
        let trailer = Data([0x79]) + withUnsafeBytes(of: target.checksum.littleEndian) { Data($0) }
        var flipped = 0
        var searchStart = bytes.startIndex
        while let range = bytes.range(of: trailer, in: searchStart..<bytes.endIndex) {
            let position = offsetFromTrailer == 0 ? range.lowerBound + 3 : range.lowerBound - offsetFromTrailer
            bytes[position] ^= 0x20
            flipped += 1
            searchStart = range.upperBound
        }
        #expect(flipped >= 1)
        try bytes.write(to: file)

        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        let report = try store.verify()
        #expect(!report.isSound)
        #expect(report.sequence == 17)
        #expect(report.problem?.code == .dataLoss)
        #expect(report.problem?.message.contains("event 17") == true, "\(String(describing: report.problem))")
    }

    @Test("a store whose views were dropped (or have an older layout) gets them rebuilt when opened")
    func droppedViewsAreRebuiltOnOpen() async throws {
        let directory = temporaryDirectory()
        let expected: StateSnapshot
        do {
            let store = try ChordStore.open(at: directory)
            for i in 0..<50 { _ = try await store.add("c\(i)") }
            try await store.execute(.moveChordset(id: try store.chordsets()[0].id, toIndex: 30))
            expected = try store.liveSnapshot()
            store.close()
        }
        // Views gone and no layout version: what a store from a version with other views looks like.
        do {
            let env = try Environment(directory: directory.appendingPathComponent("views"))
            let names = ["chordsets", "chords", "order", "positions", "created"]
            let views = try names.map { try env.openDatabase($0) }
            let meta = try env.openDatabase("meta")
            try env.withWriteTransaction { txn in
                for db in views { try txn.empty(db) }
                try txn.delete(meta, key: Array("views".utf8))
            }
        }
        let reported = ProgressLog()
        let store = try ChordStore.open(at: directory, progress: { done, total in reported.append(done, total) })
        defer { store.close() }
        #expect(try store.liveSnapshot() == expected)
        #expect(reported.last.map { [$0.0, $0.1] } == [51, 51])
        #expect(try store.verify().isSound)
    }

    @Test("a missing record is reported by verify as a gap, naming where")
    func missingRecordIsAGap() async throws {
        let directory = temporaryDirectory()
        do {
            let store = try ChordStore.open(at: directory)
            for i in 0..<20 { _ = try await store.add("c\(i)") }
            store.close()
        }
        do {
            let env = try Environment(directory: directory)
            let log = try env.openDatabase("log")
            _ = try env.withWriteTransaction { txn in
                try txn.delete(log, key: withUnsafeBytes(of: UInt64(10).bigEndian) { Array($0) })
            }
        }
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        let report = try store.verify()
        #expect(report.sequence == 11)
        #expect(report.problem?.message.contains("jumps from event 9 to 11") == true, "\(String(describing: report.problem))")
    }

    @Test("verify finds damage in the undo projections: a lost session link, a lost session record, a lost kept chordset", arguments: ["session-links", "sessions", "graveyard"])
    func damagedUndoProjections(database: String) async throws {
        let directory = temporaryDirectory()
        do {
            let store = try ChordStore.open(at: directory)
            for i in 0..<5 { _ = try await store.add("c\(i)") }
            try await store.execute(.deleteAll)
            store.close()
        }
        do {
            let env = try Environment(directory: directory.appendingPathComponent("views"))
            let db = try env.openDatabase(database)
            try env.withWriteTransaction { txn in
                let first = try txn.withCursor(db) { cursor in try cursor.first().map { Array($0.key) } }
                _ = try txn.delete(db, key: try #require(first))
            }
        }
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        let report = try store.verify()
        #expect(report.problem?.code == .dataLoss, "\(String(describing: report.problem))")
    }

    /// Records whose checksums are right but whose contents break the schema's rules.
    static let forgedEvents: [Event] = {
        var g = SplitMix64(seed: 1)
        var chordset = Chordset(
            id: UUID.random(using: &g), title: "forged", creationDate: Instant(microsecondsSince1970: 0), index: 5,
            chords: (0..<8).map { Chord(id: UUID.random(using: &g), position: $0, bpm: 120, color: .random(using: &g)) })
        var badPosition = chordset
        badPosition.chords[7].position = 300
        chordset.creationDate = Instant(microsecondsSince1970: .min)
        return [.chordsetAdded(badPosition), .chordsetAdded(chordset)]
    }()

    @Test("a record with a valid checksum but impossible contents is reported as damage by verify and rebuild, never a crash; the store takes no writes",
          arguments: forgedEvents)
    func forgedRecord(event: Event) async throws {
        let directory = temporaryDirectory()
        let last: RecordedEvent
        do {
            let store = try ChordStore.open(at: directory)
            for i in 0..<5 { _ = try await store.add("c\(i)") }
            last = try #require(try store.events(from: 5).first)
            store.close()
        }
        do {
            let forged = RecordedEvent(
                sequence: 6, epoch: 1, timestamp: last.timestamp, session: "forger", commandID: "",
                event: event, checksum: 0)
            let (bytes, _) = RecordCodec.encode(forged, previousChecksum: last.checksum)
            let env = try Environment(directory: directory)
            let log = try env.openDatabase("log")
            try env.withWriteTransaction { txn in
                try txn.put(log, key: withUnsafeBytes(of: UInt64(6).bigEndian) { Array($0) }, value: bytes, flags: .append)
            }
        }
        // The views stop at event 5: opening folds event 6 into them, finds it damaged,
        // and opens for reading only.
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        let report = try store.verify()
        #expect(report.sequence == 6)
        #expect(report.problem?.code == .dataLoss)
        await #expect(throws: ChordStoreError.self) { try await store.rebuild() }
        #expect(try store.chordsets().count == 5)
        do {
            _ = try await store.add("after the damage")
            Issue.record("a store whose log holds a forged event took a write")
        } catch let error as ChordStoreError {
            #expect(error.code == .dataLoss)
            #expect(error.message.contains("event 6"), "\(error.message)")
        }
    }

    @Test("the map grows while a reader holds a snapshot: the writer waits for it, neither fails")
    func growWithReaderOpen() async throws {
        let store = try EngineKind.lmdb.makeStore { $0.initialMapSize = 64 << 10 }
        defer { store.close() }
        _ = try await store.add("first")
        let reader = Task.detached {
            try store.forEachRecord { _, _ in
                Thread.sleep(forTimeInterval: 0.3)
                return false
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<1_000 { group.addTask { _ = try await store.add("grow \(i)") } }
            try await group.waitForAll()
        }
        try await reader.value
        #expect(try store.profile().chordsets == 1_001)
        #expect(try store.verify().isSound)
    }
}

/// Collects progress callbacks.
final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [(UInt64, UInt64)] = []

    func append(_ done: UInt64, _ total: UInt64) {
        lock.withLock { entries.append((done, total)) }
    }

    var last: (UInt64, UInt64)? { lock.withLock { entries.last } }
}
