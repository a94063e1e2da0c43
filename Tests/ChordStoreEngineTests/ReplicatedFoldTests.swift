import ChordStoreRecords
import ChordStoreDomain
@testable import ChordStoreEngine
import Dispatch
import Foundation
import Synchronization
import Testing

/// A follower's batch on the durable backend: the log takes it and it is acknowledged
/// before the views fold it; a fold that fails after that leaves the log holding the batch
/// and the views refusing commits until they are rebuilt.
@Suite("Replicated batches: logged, then folded")
struct ReplicatedFoldTests {
    /// A rename alone, chained as the first record of a log: it passes the log's checks
    /// and names a chordset that log never had, so no fold takes it.
    static func recordNoLogFolds() async throws -> [UInt8] {
        let leader = try EngineKind.lmdb.makeStore(seed: 7)
        defer { leader.close() }
        let added = try await leader.add("first")
        try await leader.execute(.renameChordset(id: added.id, title: "renamed"))
        var rename = try leader.rawRecords()[1].withUnsafeBytes { try RecordCodec.decode($0, sequence: 2) }
        rename.sequence = 1
        rename.logSequence = 1
        return RecordCodec.encode(rename, previousChecksum: 0).bytes
    }

    private func lmdb(_ store: ChordStore) throws -> LMDBBackend {
        try #require(store.backend as? LMDBBackend)
    }

    @Test("the log holds the batch, durably, when it is acknowledged; the views fold it before the append returns")
    func loggedBeforeFolded() async throws {
        let leader = try EngineKind.lmdb.makeStore(seed: 7)
        defer { leader.close() }
        for index in 0..<5 { _ = try await leader.add("title \(index)") }
        let batch = try leader.rawRecords()
        let follower = try EngineKind.lmdb.makeStore(seed: 9)
        defer { follower.close() }
        let backend = try lmdb(follower)
        var seen: (log: LogHead, views: LogHead)?
        let head = try backend.appendReplicated(batch, after: .start) { logged in
            seen = ((try? backend.logHead()) ?? .empty, (try? backend.withStores { try $0.logHead }) ?? .empty)
            #expect(logged.sequence == UInt64(batch.count))
        }
        let atAcknowledgement = try #require(seen)
        #expect(atAcknowledgement.log == head)
        #expect(atAcknowledgement.views == .empty)
        #expect(try backend.withStores { try $0.logHead } == head)
        #expect(try follower.chordsets() == leader.chordsets())
        #expect(try follower.head() == leader.head())
        #expect(backend.writeRefusal == nil)
    }

    @Test("a record the views cannot fold after the log took it: the log keeps the batch, the views stay behind and refuse commits")
    func foldFailureAfterTheLog() async throws {
        let forged = try await Self.recordNoLogFolds()
        let follower = try EngineKind.lmdb.makeStore(seed: 9)
        defer { follower.close() }
        let backend = try lmdb(follower)
        var acknowledged: LogHead?
        let head = try backend.appendReplicated([forged], after: .start) { acknowledged = $0 }
        #expect(acknowledged == head)
        #expect(try follower.head().sequence == 1)
        #expect(try backend.withStores { try $0.logHead } == .empty)
        #expect(backend.writeRefusal != nil)
        #expect(backend.viewsDamage != nil)
        #expect(follower.leadRefusal != nil, "a node whose views cannot take its log must not lead")
        await #expect(throws: ChordStoreError.self) { try await follower.appendReplicated([], after: head.position) }
    }

    @Test("a replicated batch is answered with its last position, and readers see it once it is published", arguments: EngineKind.allCases)
    func publishedAfterFold(kind: EngineKind) async throws {
        let leader = try kind.makeStore(seed: 7)
        defer { leader.close() }
        for index in 0..<20 { _ = try await leader.add("title \(index)") }
        let all = try leader.rawRecords()
        let follower = try kind.makeStore(seed: 9)
        defer { follower.close() }
        let head = try await follower.appendReplicated(all, after: .start)
        #expect(head.sequence == UInt64(all.count))
        await follower.waitForCommit(after: head.sequence - 1, timeout: .seconds(10))
        // Published, not merely folded: a batch the writer never published leaves the
        // notifier behind (and the wait above ends only by its timeout).
        #expect(follower.notifier.head >= head.sequence)
        #expect(try follower.lastLogSequence() == head.sequence)
        #expect(try follower.chordsets() == leader.chordsets())
    }

    @Test("an exclusive job's caller resumes at its first answer while the job goes on; a job that answers nothing gets INTERNAL; a closed writer refuses")
    func exclusiveAnswering() async throws {
        let store = ChordStore.inMemory()
        let release = DispatchSemaphore(value: 0)
        let finished = Atomic(false)
        let first = await store.writer.exclusive(answering: { (answer: (Result<Int, ChordStoreError>) -> Void) in
            answer(.success(1))
            answer(.success(2))
            release.wait()
            finished.store(true, ordering: .releasing)
        })
        #expect(try first.get() == 1)
        let finishedBeforeResume = finished.load(ordering: .acquiring)
        #expect(!finishedBeforeResume, "the caller resumed while its job was still running")
        release.signal()
        // The writer takes the next job only once that one ended.
        let next = await store.writer.exclusive { () -> Result<Bool, ChordStoreError> in .success(finished.load(ordering: .acquiring)) }
        #expect(try next.get())
        let silent = await store.writer.exclusive(answering: { (_: (Result<Int, ChordStoreError>) -> Void) in })
        #expect(throws: ChordStoreError.self) { try silent.get() }
        if case .failure(let error) = silent { #expect(error.code == .internal) }
        store.close()
        let closed = await store.writer.exclusive { .success(0) }
        if case .failure(let error) = closed { #expect(error.code == .unavailable) } else { Issue.record("a closed writer took a job") }
    }
}
