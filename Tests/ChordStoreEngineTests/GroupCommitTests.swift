import ChordStoreDomain
import ChordStoreEngine
import Foundation
import Testing

/// Group commit: concurrent commands share transactions, and each is validated against
/// the state left by the commands before it in the same batch.
@Suite("Group commit")
struct GroupCommitTests {
    @Test("200 concurrent durable adds are committed in fewer transactions than events")
    func batchesShareTransactions() async throws {
        let store = try EngineKind.lmdb.makeStore()
        defer { store.close() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<200 { group.addTask { _ = try await store.add("c\(i)") } }
            try await group.waitForAll()
        }
        let statistics = store.statistics
        #expect(statistics.events == 200)
        #expect(statistics.commits < 200, "\(statistics.commits) commits for 200 concurrent adds: no batching")
    }

    @Test("the writer answers each command inside an AnswerBatch: adds, refusals, and a refused writer's commands")
    func answersInsideABatch() async throws {
        let store = try EngineKind.lmdb.makeStore()
        defer { store.close() }
        let missing = DerivedChordIDs.aligned(UUID())
        let commands: [Command] = (0..<20).map { $0 % 5 == 4 ? .renameChordset(id: missing, title: "x") : .addChordset(AddChordset(title: "a\($0)")) }
        func submitAll() async -> [(inBatch: Bool, ok: Bool)] {
            await withTaskGroup(of: (Bool, Bool).self) { group in
                for command in commands {
                    group.addTask {
                        await withCheckedContinuation { continuation in
                            store.submit(command) { result in
                                let ok = if case .success = result { true } else { false }
                                continuation.resume(returning: (AnswerBatch.current != nil, ok))
                            }
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        let answers = await submitAll()
        #expect(answers.count == 20 && answers.allSatisfy(\.inBatch))
        #expect(answers.count(where: \.ok) == 16)
        store.acceptsCommands = false  // a follower's writer refuses every command of a batch
        let refused = await submitAll()
        #expect(refused.allSatisfy { $0.inBatch && !$0.ok })
    }

    #if os(Linux)
    @Test("the writer thread is named cs-writer, as /proc and tools/bench/compare's split of the CPU by thread find it")
    func writerThreadNamed() async throws {
        func writers() throws -> Int {
            let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
            return tasks.filter { task in
                (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) == "cs-writer\n"
            }.count
        }
        let store = try EngineKind.lmdb.makeStore()
        defer { store.close() }
        _ = try await store.add("named")  // the writer thread has run (and named itself)
        #expect(try writers() >= 1)
    }
    #endif

    @Test("the same id added by 50 concurrent callers is accepted once; the others get ALREADY_EXISTS", arguments: EngineKind.allCases)
    func duplicateInsideOneBatch(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        let id = UUID()
        let outcomes = await withTaskGroup(of: ChordStoreError.Code?.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    do {
                        _ = try await store.add("same", id: id)
                        return nil
                    } catch let error as ChordStoreError {
                        return error.code
                    } catch {
                        return .internal
                    }
                }
            }
            return await group.reduce(into: [ChordStoreError.Code?]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == nil }.count == 1)
        #expect(outcomes.filter { $0 == .alreadyExists }.count == 49)
        #expect(try store.profile().lastSequence == 1)
        #expect(try store.verify().isSound)
    }

    @Test("concurrent adds get ids that rise in the order the writer decided them, each chordset's chords after it", arguments: EngineKind.allCases)
    func idsRiseInDecisionOrder(kind: EngineKind) async throws {
        let store = try kind.makeStore()
        defer { store.close() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<100 { group.addTask { _ = try await store.add("c\(i)") } }
            try await group.waitForAll()
        }
        // The user order is the order of the adds' decisions: ids drawn in that order rise,
        // so the id-keyed views only ever grow at their right edge.
        let drawn = try store.chordsets(order: .index).flatMap { [$0.id] + $0.chords.map(\.id) }
        #expect(drawn.count == 900)
        #expect(zip(drawn, drawn.dropFirst()).allSatisfy(<), "ids drawn one after another do not rise (UUID's < compares bytes, as LMDB does)")
    }
}
