import ChordStoreDomain
@testable import ChordStoreEngine
import Foundation
import Testing

/// The replay's pipeline (``LogReplay``: the states on one thread, the changes on another)
/// gives what a replay event by event gives.
@Suite("Log replay")
struct LogReplayTests {
    @Test("a replay over threads equals one event by event: every store's state and changes, the registry and the tokens, over chunks of the log")
    func pipelineEqualsEventByEvent() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var options = ChordStore.Options()
        options.unsafeNoSync = true
        let store = try ChordStore.open(at: directory, options: options)
        defer { store.close() }

        // Store "from": every kind of event, undo and redo among them.
        try await ImportTests.history(in: store)
        // A store that gets events and a token, then goes; one made after it.
        _ = try await store.createStore("gone")
        _ = try await store.execute(.addChordset(AddChordset(title: "doomed")), context: CommandContext(session: "s", store: "gone"))
        _ = try await store.createToken(TokenGrant(id: "reader1", role: .readOnly, storeName: "gone", secretHash: Array(repeating: 7, count: 32)))
        _ = try await store.createToken(TokenGrant(id: "admin1", role: .admin, storeName: "", secretHash: Array(repeating: 8, count: 32)))
        _ = try await store.deleteStore("gone")
        _ = try await store.createStore("later")
        _ = try await store.execute(.addChordset(AddChordset(title: "after")), context: CommandContext(session: "s", store: "later"))
        // More events than a chunk of the replay holds (8,192), from several sessions, in
        // batches of concurrent commands, with undo and redo.
        var chords: [UUID] = []
        for n in 0..<40 {
            let added = try await store.execute(.addChordset(AddChordset(title: "set \(n)")), context: CommandContext(session: "s\(n % 4)"))
            if case .chordsetAdded(let chordset) = added.event { chords += chordset.chords.map(\.id) }
        }
        let targets = chords
        for round in 0..<34 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<256 {
                    group.addTask {
                        let context = CommandContext(session: "s\(n % 4)")
                        _ = try await store.execute(.setChordBPM(chordID: targets[(round * 256 + n) % targets.count], bpm: Double(40 + n % 200)), context: context)
                    }
                }
                try await group.waitForAll()
            }
            for session in ["s0", "s1"] { _ = try? await store.execute(.undo, context: CommandContext(session: session)) }
            _ = try? await store.execute(.redo, context: CommandContext(session: "s0"))
        }
        // A store written again in the last chunk, long after its other events.
        _ = try await store.execute(.addChordset(AddChordset(title: "late")), context: CommandContext(session: "s", store: "later"))

        let backend = try #require(store.backend as? LMDBBackend)
        let head = try backend.logHead().sequence
        #expect(head > 8_192)  // more than one chunk
        let piped = try LogReplay.replay(backend, through: head) { _, _ in }
        var records: [[UInt8]] = []
        try backend.forEachLogRecord(from: 1) { _, record in
            records.append(Array(record))
            return true
        }
        var serial = StoreSet(keepsRecords: false, indexingChords: false)
        try serial.replay(records[...])

        #expect(piped.liveStores.map(\.record) == serial.liveStores.map(\.record))
        #expect(piped.liveStores.count == 3)  // default, from, later
        for expected in serial.liveStores {
            let got = try #require(piped[expected.record.id])
            #expect(got.state == expected.state, "the state of store \(expected.record.name)")
            #expect(got.changes == expected.changes, "the changes of store \(expected.record.name)")
            #expect(got.changes != InMemoryChanges(), "store \(expected.record.name) has changes")
        }
        #expect(piped.tokens == serial.tokens)
        #expect(piped.tokens.keys.sorted() == ["admin1"])

        // Under a memory budget, the stores written least recently are evicted at the end of
        // a chunk, and folded again from the log when a later event is theirs: the state
        // is the same, store by store.
        var loads = 0
        let bounded = try LogReplay.replay(backend, through: head, indexingChords: true, budget: 1, load: { store in
            loads += 1
            return try store.resident(records: records)
        }) { _, _ in }
        #expect(loads == 1)  // "later", evicted after the first chunk
        #expect(bounded.evictedCount == 2)  // all but the store written last, after the last chunk
        let whole = try bounded.residentWhole(records: records)
        let unbounded = try LogReplay.replay(backend, through: head, indexingChords: true) { _, _ in }
        #expect(LiveStateFileTests.difference(whole, unbounded) == nil)
    }
}
