import ChordStoreDomain
import ChordStoreRecords
@testable import ChordStoreEngine
import Foundation
import LMDB
import Synchronization
import Testing

/// The LMDB backend with its state in memory (``ChordStore/Options/liveState``): commits
/// are decided against memory and write only the log before they are answered; the views
/// take no commit, and are brought up when something reads them; a store opens from the
/// state saved last and the log.
@Suite("Live state")
struct LiveStateTests {
    private static func open(_ directory: URL, live: Bool = true, configure: (inout ChordStore.Options) -> Void = { _ in }) throws -> ChordStore {
        var options = ChordStore.Options()
        options.seed = 3
        options.liveState = live
        configure(&options)
        return try ChordStore.open(at: directory, options: options)
    }

    private static func backend(_ store: ChordStore) throws -> LMDBBackend {
        try #require(store.backend as? LMDBBackend)
    }

    /// The chordsets and controls chord the views hold (not the live state).
    private static func viewsSnapshot(_ backend: LMDBBackend) throws -> StateSnapshot {
        try backend.withViewStores { stores in
            let snapshot = try stores.snapshot(of: try #require(try stores.store(named: StoreName.default)))
            return StateSnapshot(chordsets: try snapshot.chordsets(order: .index, limit: nil), controlsChord: try snapshot.controlsChord())
        }
    }

    /// Adds, renames, deletes and undoes in session `s`: events of every kind of record.
    private static func work(_ store: ChordStore, adds: Int) async throws {
        for index in 0..<adds { _ = try await store.add("c\(index)") }
        let first = try store.chordsets()[0]
        try await store.execute(.renameChordset(id: first.id, title: "renamed"), context: CommandContext(session: "s"))
        try await store.execute(.deleteChordset(id: try store.chordsets()[1].id), context: CommandContext(session: "s"))
        try await store.execute(.undo, context: CommandContext(session: "s"))
        try await store.execute(.renameChordset(id: first.id, title: "again"), context: CommandContext(session: "s", commandID: "r2"))
    }

    @Test("commits are answered from memory and the views take none; they are brought up when verify reads them, not at a close; every way of opening the directory sees the same state")
    func viewsFollowTheLog() async throws {
        let directory = temporaryDirectory()
        let expected: StateSnapshot
        do {
            let store = try Self.open(directory)
            let backend = try Self.backend(store)
            #expect(backend.live != nil)
            // A commit is answered, and read back, while the views have not taken it.
            let first = try await store.add("before the views")
            #expect(backend.viewsLag == 1)
            #expect(try store.chordset(first.id) != nil)
            #expect(try backend.withViewStores { try $0.logHead.sequence } == 0)
            try await store.execute(.deleteChordset(id: first.id))
            try await Self.work(store, adds: 30)
            #expect(try backend.withViewStores { try $0.logHead.sequence } == 0)
            expected = try store.liveSnapshot()
            #expect(expected == (try store.replayedSnapshot()))
            // verify brings them up (a catch-up of 36 events) and checks them.
            #expect(try store.verify().isSound)
            #expect(backend.viewsLag == 0)
            #expect(try Self.viewsSnapshot(backend) == expected)
            // A repeated command id is answered from the log with its original event.
            let repeated = try await store.execute(.renameChordset(id: expected.chordsets[0].id, title: "again"), context: CommandContext(session: "s", commandID: "r2"))
            #expect(repeated.sequence == 36)
            for index in 0..<5 { _ = try await store.add("late \(index)") }
            store.close()
        }
        // The close left the views where verify brought them (read alone, as a new follower does).
        let views = try ChordStore.openViews(at: directory.appendingPathComponent("views"))
        #expect(try views.lastLogSequence() == 36)
        views.close()
        let reopened = try Self.open(directory)
        #expect(try reopened.chordsets().count == 35)
        #expect(try Self.backend(reopened).viewsLag == 5)
        // The undo stacks came back with the replay: session s undoes its last rename.
        try await reopened.execute(.undo, context: CommandContext(session: "s"))
        #expect(try reopened.chordsets()[0].title == "renamed")
        let state = try reopened.liveSnapshot()
        reopened.close()
        let classic = try Self.open(directory, live: false)
        defer { classic.close() }
        #expect(try classic.liveSnapshot() == state)
        #expect(try classic.verify().isSound)
    }

    @Test("a point read of the live state opens no transaction of the log; a read of records opens one, and sees them")
    func pointReadsOpenNoLogTransaction() async throws {
        let store = try Self.open(temporaryDirectory())
        defer { store.close() }
        let backend = try Self.backend(store)
        let added = try await store.add("point")
        try await store.execute(.renameChordset(id: added.id, title: "read"), context: CommandContext(session: "s"))
        let before = backend.logEnv.readTransactionsBegun
        #expect(try store.chordset(added.id)?.title == "read")
        #expect(try store.chordsetMessage(added.id) != nil)
        #expect(try store.chordsets().count == 1)
        #expect(backend.logEnv.readTransactionsBegun == before, "point reads and lists are answered from memory alone")
        let history = try store.history(chordset: added.id)
        #expect(history.count == 2)
        #expect(backend.logEnv.readTransactionsBegun == before + 1, "the history reads its records in one transaction")
        // A log cut back after the state was read (its record at the state's head is
        // another) refuses the lookup, to be tried again; the log as read is served.
        let head = try #require(backend.live).read { $0.logHead }
        var cut = head
        cut.checksum &+= 1
        for (stated, refused) in [(head, false), (cut, true)] {
            let outcome = Result { () throws -> Int? in
                try backend.logEnv.withLazyReadTransaction { lazy in
                    try LazyLogRecords(lazy: lazy, log: backend.dbs.log, head: stated).withRecord(at: 1) { $0.count }
                }
            }
            switch outcome {
            case .success(let bytes): #expect(!refused && (bytes ?? 0) > 0)
            case .failure(let error): #expect(refused && (error as? ChordStoreError)?.code == .unavailable, "\(error)")
            }
        }
    }

    @Test("views a crash left behind the log are brought up when read; the live state is the log's")
    func crashLeavesViewsBehind() async throws {
        let directory = temporaryDirectory()
        let early = temporaryDirectory()
        let expected: StateSnapshot
        do {
            let store = try Self.open(directory)
            try await Self.work(store, adds: 10)
            #expect(try store.verify().isSound)  // which brings the views up
            store.close()
            try FileManager.default.copyItem(at: directory.appendingPathComponent("views"), to: early)
            let reopened = try Self.open(directory)
            try await Self.work(reopened, adds: 10)
            expected = try reopened.liveSnapshot()
            reopened.close()
        }
        // The views of the first opening (brought up by its verify) beside the whole log,
        // marked open in this boot: views behind the log, as a kill leaves them.
        try FileManager.default.removeItem(at: directory.appendingPathComponent("views"))
        try FileManager.default.copyItem(at: early, to: directory.appendingPathComponent("views"))
        let boot = try String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        try boot.write(to: directory.appendingPathComponent("views/open"), atomically: true, encoding: .utf8)
        let store = try Self.open(directory)
        defer { store.close() }
        let backend = try Self.backend(store)
        #expect(try store.liveSnapshot() == expected)
        try backend.bringViewsUp()
        #expect(backend.viewLoads.load(ordering: .relaxed) == 0)  // caught up, not loaded
        #expect(try Self.viewsSnapshot(backend) == expected)
        try await store.execute(.undo, context: CommandContext(session: "s"))
        #expect(try store.verify().isSound)
    }

    @Test("views that must be rebuilt (here, gone) are loaded from a copy of the live state when read")
    func viewsLoadedFromTheLiveState() async throws {
        let directory = temporaryDirectory()
        do {
            let store = try Self.open(directory)
            try await Self.work(store, adds: 20)
            store.close()
        }
        try FileManager.default.removeItem(at: directory.appendingPathComponent("views"))
        let store = try Self.open(directory)
        defer { store.close() }
        let backend = try Self.backend(store)
        try await Self.work(store, adds: 5)
        #expect(backend.viewLoads.load(ordering: .relaxed) == 0)
        try backend.bringViewsUp()
        #expect(backend.viewLoads.load(ordering: .relaxed) == 1)
        #expect(backend.viewsLag == 0)
        #expect(try Self.viewsSnapshot(backend) == (try store.liveSnapshot()))
        #expect(try store.verify().isSound)
        // Current views are left as they are; a later commit leaves them one behind.
        try backend.bringViewsUp()
        #expect(backend.viewLoads.load(ordering: .relaxed) == 1)
        _ = try await store.add("later")
        #expect(backend.viewsLag == 1)
        // A store opened without live state catches them up and serves them.
        store.close()
        let classic = try Self.open(directory, live: false)
        defer { classic.close() }
        #expect(try classic.chordsets().map(\.title).contains("later"))
        #expect(try classic.verify().isSound)
    }

    @Test("a follower's batch is acknowledged once the log holds it and the live state shows it; the views take it when brought up")
    func followerBatch() async throws {
        let leader = try EngineKind.lmdb.makeStore(seed: 7)
        defer { leader.close() }
        for index in 0..<5 { _ = try await leader.add("title \(index)") }
        let batch = try leader.rawRecords()
        let follower = try Self.open(temporaryDirectory())
        defer { follower.close() }
        let backend = try Self.backend(follower)
        var seen: LogHead?
        let head = try backend.appendReplicated(batch, after: .start) { _ in
            seen = try? backend.withStores { try $0.logHead }
        }
        #expect(seen == head)
        #expect(try follower.chordsets() == leader.chordsets())
        #expect(try backend.withViewStores { try $0.logHead } == .empty)
        backend.catchUpViews()
        #expect(try backend.withViewStores { try $0.logHead } == head)
        #expect(try follower.verify().isSound)
    }

    @Test("a follower's batches reach both copies of the live state: each is folded into one and replayed, decoded once, into the other")
    func followerBatchesBothCopies() async throws {
        let leader = try EngineKind.lmdb.makeStore(seed: 7)
        defer { leader.close() }
        var added: [Chordset] = []
        for index in 0..<6 { added.append(try await leader.add("title \(index)")) }
        try await leader.execute(.renameChordset(id: added[1].id, title: "renamed"))
        try await leader.execute(.deleteChordset(id: added[2].id))
        try await leader.execute(.undo)
        try await leader.execute(.deleteChordset(id: added[4].id))
        let records = try leader.rawRecords()
        let follower = try Self.open(temporaryDirectory())
        defer { follower.close() }
        let backend = try Self.backend(follower)
        // Three batches: after the second and the third, readers read the copy that took
        // the batch before by replay (a replay that dropped or repeated it would fail the
        // fold of the next batch, or the verify's comparison with the log).
        var head = LogHead.empty
        for batch in [records[0..<3], records[3..<7], records[7...]] {
            head = try backend.appendReplicated(Array(batch), after: head.position) { _ in }
            #expect(try follower.verify().isSound)
        }
        #expect(head.sequence == UInt64(records.count))
        #expect(try follower.chordsets() == leader.chordsets())
        #expect(try follower.liveSnapshot() == leader.liveSnapshot())
        #expect(follower.writeRefusal == nil)
    }

    @Test("a log record the live state cannot take when the store opens leaves the store on its views, as without live state")
    func damagedLogFallsBack() async throws {
        let directory = temporaryDirectory()
        do {
            let store = try Self.open(directory)
            for index in 0..<5 { _ = try await store.add("c\(index)") }
            store.close()
        }
        // Change one byte of the third record: its checksum no longer chains.
        do {
            let store = try Self.open(directory, live: false)
            let backend = try Self.backend(store)
            try backend.logEnv.withWriteTransaction { txn in
                var record = Array(try #require(try txn.get(backend.dbs.log, key: StoreKeys.sequence(3))))
                record[record.count / 2] ^= 0xFF
                try txn.put(backend.dbs.log, key: StoreKeys.sequence(3), value: record)
            }
            store.close()
        }
        do {
            // Views of this log folded before the damage (by the opening above) are kept.
            let store = try Self.open(directory)
            defer { store.close() }
            let backend = try Self.backend(store)
            #expect(backend.live == nil)
            #expect(store.liveStateFailure?.code == .dataLoss)
            #expect(try store.chordsets().count == 5)
            #expect(store.writeRefusal?.code == .dataLoss)
            #expect(try !store.verify().isSound)
        }
        // Views that cannot serve (gone; with live state they may also stop far behind)
        // are rebuilt from the records before the damaged one.
        try FileManager.default.removeItem(at: directory.appendingPathComponent("views"))
        let store = try Self.open(directory)
        defer { store.close() }
        #expect(try Self.backend(store).live == nil)
        #expect(try store.chordsets().map(\.title) == ["c0", "c1"])
        #expect(store.writeRefusal?.code == .dataLoss)
        await #expect(throws: ChordStoreError.self) { _ = try await store.add("refused") }
        #expect(try !store.verify().isSound)
    }

    @Test("a follower's record the live state cannot take after the log took it: the batch stays logged, writes are refused, and a checkpoint does not clear it")
    func followerRecordRefused() async throws {
        let forged = try await ReplicatedFoldTests.recordNoLogFolds()
        let follower = try Self.open(temporaryDirectory())
        defer { follower.close() }
        let backend = try Self.backend(follower)
        var acknowledged: LogHead?
        let head = try backend.appendReplicated([forged], after: .start) { acknowledged = $0 }
        #expect(acknowledged == head)
        #expect(try follower.head().sequence == 1)
        #expect(try backend.withStores { try $0.logHead } == .empty)
        #expect(follower.writeRefusal != nil)
        backend.catchUpViews()
        #expect(follower.writeRefusal != nil)
        #expect(follower.leadRefusal != nil)
        await #expect(throws: ChordStoreError.self) { _ = try await follower.add("refused") }
    }
}
