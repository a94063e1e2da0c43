import ChordStoreDomain
import ChordStoreEngine
import Foundation
import Testing

/// A command id makes a retried command apply once: the retry gets the original event
/// and writes nothing, across batches, concurrency, restarts and rebuilds.
@Suite("Idempotent command ids")
struct IdempotencyTests {
    @Test("a repeated command id returns the original event and writes nothing", arguments: EngineKind.allCases)
    func repeatReturnsOriginal(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let context = CommandContext(session: "ipad", commandID: "add-1")
        let first = try await store.execute(.addChordset(AddChordset(title: "once")), context: context)
        let again = try await store.execute(.addChordset(AddChordset(title: "once")), context: context)
        #expect(again == first)
        #expect(try store.profile() == Profile(chordsets: 1, chords: 8, hasControlsChord: false, lastSequence: 1))
    }

    @Test("20 concurrent retries of one command id apply it once", arguments: EngineKind.allCases)
    func concurrentRetries(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let sequences = try await withThrowingTaskGroup(of: UInt64.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await store.execute(.addChordset(AddChordset(title: "x")), context: CommandContext(commandID: "same")).sequence
                }
            }
            return try await group.reduce(into: Set<UInt64>()) { $0.insert($1) }
        }
        #expect(sequences == [1])
        #expect(try store.profile().chordsets == 1)
    }

    @Test("a command id reused for another kind of command is refused with FAILED_PRECONDITION", arguments: EngineKind.allCases)
    func reuseForAnotherCommand(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let added = try await store.add("a")
        _ = try await store.execute(.renameChordset(id: added.id, title: "b"), context: CommandContext(commandID: "k"))
        do {
            _ = try await store.execute(.deleteChordset(id: added.id), context: CommandContext(commandID: "k"))
            Issue.record("the reused id was accepted")
        } catch {
            #expect(error.code == .failedPrecondition)
            #expect(error.message.contains("already used by event 2"))
        }
        #expect(try store.chordset(added.id) != nil)
    }

    @Test("the command index survives a restart and a rebuild, and verify checks it")
    func survivesRestartAndRebuild() async throws {
        let directory = temporaryDirectory()
        let first: RecordedEvent
        do {
            let store = try ChordStore.open(at: directory)
            first = try await store.execute(.addChordset(AddChordset(title: "t")), context: CommandContext(commandID: "c-1"))
            _ = try await store.add("other")
            store.close()
        }
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        #expect(try await store.execute(.addChordset(AddChordset(title: "t")), context: CommandContext(commandID: "c-1")) == first)
        try await store.rebuild()
        #expect(try await store.execute(.addChordset(AddChordset(title: "t")), context: CommandContext(commandID: "c-1")) == first)
        #expect(try store.profile().lastSequence == 2)
        #expect(try store.verify().isSound)
    }

    @Test("delete-all keeps the command index: an earlier command id still returns its event", arguments: EngineKind.allCases)
    func deleteAllKeepsIndex(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let first = try await store.execute(.addChordset(AddChordset(title: "a")), context: CommandContext(commandID: "first"))
        try await store.execute(.deleteAll, context: CommandContext(commandID: "wipe"))
        #expect(try await store.execute(.addChordset(AddChordset(title: "a")), context: CommandContext(commandID: "first")) == first)
        #expect(try store.profile().chordsets == 0)
        #expect(try store.verify().isSound)
    }
}
