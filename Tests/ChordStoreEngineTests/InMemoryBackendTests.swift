import ChordStoreDomain
import ChordStoreRecords
@testable import ChordStoreEngine
import Foundation
import Testing

/// The in-memory backend's two copies (``LeftRight``) stay equal: each write's replay is
/// exactly what the write appended, and the writer's copy is brought up to date in place.
@Suite("In-memory backend: the copy readers read and the writer's")
struct InMemoryBackendTests {
    static let applier = BatchApplier(decider: Decider(), epoch: 1, maxStores: 10, maxTokens: 10)

    static func add(_ title: String, id: String = "") -> SubmittedCommand {
        SubmittedCommand(command: .addChordset(AddChordset(title: title)), context: CommandContext(session: "s", commandID: id))
    }

    /// Everything a reader reads of store `default`, as one comparable value.
    static func published(_ backend: InMemoryBackend) throws -> [String] {
        try backend.withSnapshot(store: StoreName.default) { snapshot in
            try snapshot.chordsets(order: .index, limit: nil).map { "\($0.id) \($0.title) \($0.index)" } + ["head \(snapshot.head)"]
        }
    }

    @Test("a command id repeated within one batch is answered, not replayed twice: the next commits change the copies in place")
    func repeatedInOneBatch() throws {
        let backend = InMemoryBackend()
        var generator = IncreasingIDs(SplitMix64(seed: 3))
        let results = backend.commit([Self.add("a", id: "same"), Self.add("a", id: "same"), Self.add("b")], applier: Self.applier, generator: &generator)
        let events = try results.map { try $0.get().recorded }
        #expect(events.map(\.logSequence) == [1, 1, 2])
        for title in ["c", "d", "e"] {
            _ = try backend.commit([Self.add(title)], applier: Self.applier, generator: &generator)[0].get()
        }
        #expect(backend.stateCopies == 0)
        #expect(try Self.published(backend).count == 6)
        #expect(try backend.logHead().sequence == 5)
        let replayed = try StoreSet.replaying(Self.records(backend), keepsRecords: false)
        #expect(replayed.logHead == (try backend.logHead()))
        #expect(replayed[0]?.state.chordsetCount() == 5)
    }

    static func records(_ backend: InMemoryBackend) throws -> [[UInt8]] {
        var records: [[UInt8]] = []
        try backend.forEachLogRecord(from: 1) { _, record in
            records.append(Array(record))
            return true
        }
        return records
    }

    @Test("a batch that does not follow the log is refused before the writer's copy is touched")
    func refusedBatchCostsNoCopy() throws {
        let leader = InMemoryBackend()
        var generator = IncreasingIDs(SplitMix64(seed: 5))
        for title in ["a", "b", "c"] { _ = try leader.commit([Self.add(title)], applier: Self.applier, generator: &generator)[0].get() }
        let records = try Self.records(leader)
        let follower = InMemoryBackend()
        _ = try follower.appendReplicated(Array(records[..<1]), after: .start) { _ in }
        #expect(throws: ChordStoreError.self) {
            try follower.appendReplicated(Array(records[2...]), after: try leader.logHead().position) { _ in }
        }
        _ = try follower.appendReplicated(Array(records[1...]), after: follower.logHead().position) { _ in }
        #expect(follower.stateCopies == 0)
        #expect(try Self.published(follower) == Self.published(leader))
    }

    @Test("after imports of older events the log's head keeps its latest time in both copies")
    func importKeepsTheHeadTime() async throws {
        let store = ChordStore.inMemory()
        defer { store.close() }
        _ = try await store.createStore("from")
        for title in ["a", "b"] {
            _ = try await store.execute(.addChordset(AddChordset(title: title)), context: CommandContext(store: "from"))
        }
        let exported = try store.events(from: 1, limit: 100, store: "from")
        _ = try await store.createStore("to")
        _ = try await store.execute(.addChordset(AddChordset(title: "latest")))
        let backend = try #require(store.backend as? InMemoryBackend)
        let latest = try backend.logHead().timestamp
        // Each import's replay reaches the copy the one before it was published on.
        _ = try await store.importEvents(Array(exported[..<1]), store: "to")
        _ = try await store.importEvents(Array(exported[1...]), store: "to")
        #expect(try backend.logHead().timestamp >= latest)
        #expect(backend.stateCopies == 0)
    }
}
