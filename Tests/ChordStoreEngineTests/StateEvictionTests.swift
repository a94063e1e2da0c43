import ChordStoreDomain
import ChordStoreRecords
@testable import ChordStoreEngine
import Foundation
import LMDB
import Synchronization
import Testing

/// The live state's memory bound (``ChordStore/Options/maxStateMemory``): over it, the
/// stores used least recently are evicted from memory and folded again from the log when
/// next used; what a client sees does not change.
@Suite("State eviction")
struct StateEvictionTests {
    private static func open(_ directory: URL, bound: Int? = 1, live: Bool = true) throws -> ChordStore {
        var options = ChordStore.Options()
        options.seed = 7
        options.liveState = live
        options.maxStateMemory = bound
        return try ChordStore.open(at: directory, options: options)
    }

    private static func backend(_ store: ChordStore) throws -> LMDBBackend {
        try #require(store.backend as? LMDBBackend)
    }

    /// The ids of the stores evicted now (both copies agree once a turn ended).
    private static func evicted(_ store: ChordStore) throws -> Set<UInt32> {
        try #require(try backend(store).live).read { set in Set(set.stores.values.filter { $0.evicted != nil }.map(\.record.id)) }
    }

    /// The whole log's records from `sequence` (every store's, and the stores' own events).
    private static func logRecords(_ store: ChordStore, from sequence: UInt64) throws -> [[UInt8]] {
        var records: [[UInt8]] = []
        try store.forEachLogRecord(from: sequence) { _, record in
            records.append(Array(record))
            return true
        }
        return records
    }

    /// Evicts the store `id` from the live state, in both copies, as `cs-evict` would.
    private static func evict(_ id: UInt32, in live: LeftRight<StoreSet>) throws {
        try live.write { set in
            set.evict([id])
            return ((), { $0.evict([id]) })
        }
    }

    /// Waits up to 10 s for `condition`.
    private static func eventually(_ condition: () throws -> Bool) async throws -> Bool {
        for _ in 0..<1_000 {
            if try condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return try condition()
    }

    /// A live state bound to 1 byte, without sync, with store `big` (id 1) of 1,040 chordsets.
    private static func openWithBigStore() async throws -> ChordStore {
        var options = ChordStore.Options()
        options.liveState = true
        options.maxStateMemory = 1
        options.unsafeNoSync = true
        let store = try ChordStore.open(at: temporaryDirectory(), options: options)
        _ = try await store.createStore("big")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<16 {
                group.addTask {
                    for n in 0..<65 { _ = try await store.execute(.addChordset(AddChordset(title: "\(task)-\(n)")), context: CommandContext(store: "big")) }
                }
            }
            try await group.waitForAll()
        }
        return store
    }

    /// What a client reads of store `name`: its chordsets, its controls chord, a
    /// chordset's and a session's history, and its description.
    private static func reads(_ store: ChordStore, _ name: String) throws -> String {
        let chordsets = try store.chordsets(store: name)
        let first = chordsets.first?.id
        let history = try first.map { try store.history(chordset: $0, store: name).map(\.logSequence) } ?? []
        let sessions = try ["alice", "bob", "carol"].map { try store.history(session: $0, store: name).map(\.logSequence) }
        let info = try store.storeInfo(name)
        return "\(chordsets.map { "\($0.title) \($0.chords.map(\.bpm))" }) \(history) \(sessions) \(info.chordsets) \(info.chords) \(info.headSequence)"
    }

    // MARK: The plan

    @Test("the plan evicts nothing under the bound; over it, the least recently used first (never used before all), down to three quarters of the bound, never the store used last")
    func plan() {
        let entries = (0..<4).map { ResidencyPlan.Entry(id: UInt32($0), resident: true, bytes: 100, keptBytes: 10) }
        #expect(ResidencyPlan.total(entries) == 800)
        #expect(ResidencyPlan.evictions(entries, lastUse: [:], bound: 800).isEmpty)
        // 800 > 700: evict to at most 525; each eviction frees (100 - 10) * 2: 620, then 440.
        #expect(ResidencyPlan.evictions(entries, lastUse: [0: 5, 1: 1, 2: 9, 3: 7], bound: 700) == [1, 0])
        // Never used sorts first (by id), then by last use.
        #expect(ResidencyPlan.evictions(entries, lastUse: [0: 5, 2: 9], bound: 700) == [1, 3])
        // A bound nothing meets: all but the store used last.
        #expect(ResidencyPlan.evictions(entries, lastUse: [0: 5, 1: 1, 2: 9, 3: 7], bound: 1) == [1, 0, 3])
        // Evicted stores are not evicted again, and count their kept bytes.
        var some = entries
        some[1].resident = false
        some[1].bytes = 10
        #expect(ResidencyPlan.evictions(some, lastUse: [0: 5, 2: 9, 3: 7], bound: 1) == [0, 3])
        // One store alone over the bound stays.
        #expect(ResidencyPlan.evictions([entries[0]], lastUse: [:], bound: 1).isEmpty)
    }

    @Test("a turn is due after a change; turns start at most once per interval, and not while one runs; a change wakes the thread only when nothing was due")
    func schedule() {
        let start = ContinuousClock.now
        var schedule = ResidencySchedule(interval: .milliseconds(20))
        var steps = [schedule.next(now: start)]
        let woke = schedule.note()
        steps.append(schedule.next(now: start))
        let wokeWhileRunning = schedule.note()  // running: the thread asks again when it ends
        steps.append(schedule.next(now: start))
        schedule.finished(())
        steps.append(schedule.next(now: start + .milliseconds(5)))
        // Due already, asleep until the interval ends: more commits do not wake it.
        let wokeWhileDue = [schedule.note(), schedule.note()]
        steps.append(schedule.next(now: start + .milliseconds(20)))
        schedule.finished(())
        steps.append(schedule.next(now: start + .seconds(1)))
        // Nothing due, asleep with no deadline: a change wakes it.
        let wokeWhenIdle = schedule.note()
        steps.append(schedule.next(now: start + .seconds(1)))
        #expect(woke && !wokeWhileRunning && wokeWhileDue == [false, false] && wokeWhenIdle)
        #expect(steps == [.sleep(until: nil), .work, .sleep(until: nil), .sleep(until: start + .milliseconds(20)), .work, .sleep(until: nil), .work])
        #expect(schedule.turns == 2)
    }

    // MARK: The store

    @Test("evicted stores read and write as before: reads fold them from the log and put them back, writes load them (undo stacks, command ids), counts list without a load; a store over the bound alone stays")
    func evictedStoresBehaveTheSame() async throws {
        let directory = temporaryDirectory()
        let store = try Self.open(directory)
        defer { store.close() }
        try await LiveStateFileTests.work(store, round: 1)
        let names = ["default", "songs-1"]
        let before = try names.map { try Self.reads(store, $0) }
        // Bound 1: every store but the one used last is evicted. (The reads above may have
        // folded one, left to be put back: the turn that does it evicts the other.)
        let backend = try Self.backend(store)
        let residency = try #require(backend.residency)
        let evictor = try #require(backend.evictorSlot.withLock { $0 })
        #expect(try await Self.eventually {
            let turns = evictor.turns
            return try Self.evicted(store).count == 1 && residency.waitingLoads == 0 && evictor.turns == turns
        })
        // A list of stores reads the counts kept, and loads nothing.
        let listed = try store.stores()
        #expect(listed.map(\.chordsets) == [0, 1])  // round 1 ends with a delete-all in `default`
        #expect(try Self.evicted(store).count == 1)
        // Reads of the evicted store are the same, and put it back (then the other goes).
        let evictedID = try #require(try Self.evicted(store).first)
        let evictedName = try #require(listed.first { $0.id == evictedID }).name
        let index = try #require(names.firstIndex(of: evictedName))
        #expect(try Self.reads(store, evictedName) == before[index])
        // (A turn may plan with uses noted just before a read: the read goes on until it wins.)
        #expect(try await Self.eventually { _ = try store.chordsets(store: evictedName); return try Self.evicted(store) == [evictedID == 0 ? 1 : 0] })
        for (index, name) in names.enumerated() { #expect(try Self.reads(store, name) == before[index]) }
        // Writes to an evicted `default`: a repeated command id is answered with its first
        // event, not applied again; undo follows the session's stack folded from the log.
        #expect(try await Self.eventually { _ = try store.chordsets(store: "songs-1"); return try Self.evicted(store) == [0] })
        let head = backend.committedHead.withLock { $0 }.sequence
        let original = try #require(try store.events(store: StoreName.default).first { $0.commandID == "cmd-1" })
        let repeated = try await store.execute(
            .renameChordset(id: UUID(), title: "ignored"), context: CommandContext(session: "alice", commandID: "cmd-1"))
        #expect(repeated.logSequence == original.logSequence)
        #expect(backend.committedHead.withLock { $0 }.sequence == head)
        #expect(try await Self.eventually { _ = try store.chordsets(store: "songs-1"); return try Self.evicted(store) == [0] })
        try await store.execute(.undo, context: CommandContext(session: "dave"))
        #expect(try store.chordsets().count == 7)  // the delete-all's chordsets came back
        // Loads and evictions were replayed on the other copy: no replay failed.
        #expect(try #require(backend.live).failedReplays == 0)
        // The size kept as the state changed is the stores' sizes summed.
        let sizes = try #require(backend.live).read { set in (set.estimatedBytes, set.stores.values.reduce(0) { $0 + $1.estimatedBytes }) }
        #expect(sizes.0 == sizes.1 && sizes.0 > 0)
        // The live state is a replay of the log, store by store.
        let (live, replayed) = try LiveStateFileTests.liveAndReplay(store)
        let whole = try backend.residentWhole(live)
        #expect(LiveStateFileTests.difference(whole, replayed) == nil)
        #expect(try store.verify().isSound)
    }

    @Test("a close saves evicted stores as their log index alone; the next opening keeps them evicted, or folds them to replay events logged after the save; the state is the log's")
    func savedEvicted() async throws {
        let directory = temporaryDirectory()
        do {
            let store = try Self.open(directory)
            try await LiveStateFileTests.work(store, round: 1)
            _ = try await store.createStore("extra")
            _ = try await store.execute(.addChordset(AddChordset(title: "extra")), context: CommandContext(store: "extra"))
            #expect(try await Self.eventually { _ = try store.chordsets(store: "songs-1"); return try Self.evicted(store) == [0, 3] })
            store.close()
        }
        let saved = try #require(try LiveStateFile.read(directory.appendingPathComponent(LiveStateFile.name)))
        #expect(saved.set.stores[0]?.evicted == StoreCounts(chordsets: 0, chords: 1))  // round 1 ends with a delete-all; the controls chord
        #expect(saved.set.stores[0]?.state.chordsetCount() == 0)
        #expect(saved.set.stores[0]?.log.commands["cmd-1"] != nil)
        do {
            let store = try Self.open(directory, bound: nil)
            #expect(try Self.backend(store).liveStart.withLock { $0 } == .saved(at: saved.set.logHead.sequence, replayed: 0))
            #expect(try Self.evicted(store) == [0, 3])  // no bound now, but nothing loads them before they are used
            #expect(try store.stores().map(\.chordsets) == [0, 1, 1])
            let (live, replayed) = try LiveStateFileTests.liveAndReplay(store)
            #expect(LiveStateFileTests.difference(try Self.backend(store).residentWhole(live), replayed) == nil)
            store.close()
        }
        // Events logged after the save (by an opening on the views): the next opening folds
        // the evicted store before it replays them.
        do {
            let store = try Self.open(directory, bound: nil, live: false)
            _ = try await store.add("after the save")
            _ = try await store.execute(.addChordset(AddChordset(title: "songs, after")), context: CommandContext(store: "songs-1"))
            store.close()
        }
        do {
            let store = try Self.open(directory, bound: nil)
            defer { store.close() }
            guard case .saved(_, let replayed) = try Self.backend(store).liveStart.withLock({ $0 }) else {
                Issue.record("the saved state was set aside")
                return
            }
            #expect(replayed == 2)
            // `default` had an event to replay: folded from the log first; `extra` had none.
            #expect(try Self.evicted(store) == [3])
            #expect(try store.chordsets().count == 1)
            #expect(try store.chordsets(store: "extra").map(\.title) == ["extra"])
            #expect(try store.chordsets(store: "songs-1").count == 2)
            let (live, replayed2) = try LiveStateFileTests.liveAndReplay(store)
            #expect(LiveStateFileTests.difference(try Self.backend(store).residentWhole(live), replayed2) == nil)
            #expect(try store.verify().isSound)
        }
    }

    @Test("a follower's batches, an import and a store's deletion reach evicted stores: the state is the log's, both copies alike (no replay fails)")
    func followerImportAndDeletion() async throws {
        let leader = try EngineKind.lmdb.makeStore(seed: 7)
        defer { leader.close() }
        _ = try await leader.createStore("a")
        _ = try await leader.createStore("b")
        for store in ["default", "a", "b"] {
            _ = try await leader.execute(.addChordset(AddChordset(title: "first in \(store)")), context: CommandContext(store: store))
        }
        let follower = try Self.open(temporaryDirectory())
        defer { follower.close() }
        let backend = try Self.backend(follower)
        var head = try backend.appendReplicated(try Self.logRecords(leader, from: 1), after: .start) { _ in }
        #expect(try await Self.eventually { _ = try follower.chordsets(store: "b"); return try Self.evicted(follower) == [0, 1] })
        // The leader writes to stores the follower has evicted; the follower applies them.
        let next = head.sequence + 1
        _ = try await leader.execute(.addChordset(AddChordset(title: "second in a")), context: CommandContext(store: "a"))
        _ = try await leader.execute(.addChordset(AddChordset(title: "second in default")))
        head = try backend.appendReplicated(try Self.logRecords(leader, from: next), after: head.position) { _ in }
        for store in ["default", "a", "b"] { #expect(try follower.chordsets(store: store) == leader.chordsets(store: store)) }
        #expect(try await Self.eventually { _ = try follower.chordsets(store: "b"); return try Self.evicted(follower) == [0, 1] })
        // A deletion of an evicted store.
        let deleted = head.sequence + 1
        _ = try await leader.deleteStore("a")
        head = try backend.appendReplicated(try Self.logRecords(leader, from: deleted), after: head.position) { _ in }
        #expect(try follower.stores().map(\.name) == ["default", "b"])
        let live = try #require(backend.live)
        #expect(live.failedReplays == 0)
        let (state, replayed) = try LiveStateFileTests.liveAndReplay(follower)
        #expect(LiveStateFileTests.difference(try backend.residentWhole(state), replayed) == nil)
        #expect(try follower.verify().isSound)

        // An import into an evicted store (a store of its own, on a leader with the bound).
        let importer = try Self.open(temporaryDirectory())
        defer { importer.close() }
        _ = try await importer.createStore("songs")  // an import goes to a store with no events
        _ = try await importer.execute(.addChordset(AddChordset(title: "in default")))
        #expect(try await Self.eventually { _ = try importer.chordsets(); return try Self.evicted(importer) == [1] })
        let events = try leader.events(store: "b")
        _ = try await importer.importEvents(events, store: "songs")
        #expect(try importer.chordsets(store: "songs").map(\.title) == ["first in b"])
        #expect(try #require(try Self.backend(importer).live).failedReplays == 0)
        #expect(try importer.verify().isSound)
    }

    @Test("a command to a large evicted store has it folded by its caller, not by the writer; a small one is left to the writer")
    func largeStoreFoldedAhead() async throws {
        let store = try await Self.openWithBigStore()
        defer { store.close() }
        let backend = try Self.backend(store)
        let residency = try #require(backend.residency)
        #expect(try await Self.eventually { _ = try store.chordsets(); return try Self.evicted(store) == [1] })
        // The thread that keeps the bound would take the load: stopped first.
        backend.evictorSlot.withLock { $0 }?.stop()
        _ = residency.takeLoaded(id: 1)
        backend.prepareWrite(store: "big")
        let left = residency.takeLoaded(id: 1)
        #expect(left?.store.evicted == nil && left?.store.state.chordsetCount() == 1_040)
        #expect(left?.generation == backend.live?.read { $0.generation })
        backend.prepareWrite(store: "default")  // in memory: nothing to fold
        #expect(residency.takeLoaded(id: 0) == nil)
        _ = try await store.execute(.addChordset(AddChordset(title: "one more")), context: CommandContext(store: "big"))
        #expect(try store.chordsets(store: "big").count == 1_041)
        #expect(try #require(backend.live).failedReplays == 0)
    }

    @Test("a read of an evicted store folds it outside its read of the state: commits meanwhile neither wait for the read nor copy the state")
    func readFoldsOutside() async throws {
        let store = try await Self.openWithBigStore()
        defer { store.close() }
        let backend = try Self.backend(store)
        let live = try #require(backend.live)
        let id = try #require(try store.chordsets(limit: 1, store: "big").first?.id)
        #expect(try await Self.eventually { _ = try store.chordsets(); return try Self.evicted(store) == [1] })
        // Stopped, so that the store stays evicted and each read below folds it.
        backend.evictorSlot.withLock { $0 }?.stop()
        let copies = live.fallbackCopies
        // Reads on a thread of their own (not the task pool's, which the commits need),
        // commits here until eight reads are done.
        let reads = Atomic(0)
        let wrongReads = Atomic(0)
        let stop = Atomic(false)
        let stopped = Atomic(false)
        Thread {
            while !stop.load(ordering: .relaxed) {
                if (try? store.chordset(id, store: "big"))??.id != id { wrongReads.add(1, ordering: .relaxed) }
                reads.add(1, ordering: .relaxed)
            }
            stopped.store(true, ordering: .releasing)
        }.start()
        var commits = 0
        let deadline = ContinuousClock.now + .seconds(20)
        while reads.load(ordering: .relaxed) < 8 || commits < 8, ContinuousClock.now < deadline {
            _ = try await store.execute(.addChordset(AddChordset(title: "meanwhile")))
            commits += 1
        }
        stop.store(true, ordering: .relaxed)
        #expect(try await Self.eventually { stopped.load(ordering: .acquiring) })
        let done = reads.load(ordering: .relaxed)
        #expect(done >= 8 && wrongReads.load(ordering: .relaxed) == 0)
        #expect(try Self.evicted(store) == [1])
        #expect(commits >= 8)
        // A fold inside the read holds the copy for the fold (milliseconds): the next
        // commit but one copies the state, nearly once per read (8 copies in 9 reads,
        // measured with the fold put back in the read). A reader the scheduler stops
        // inside its read for more than the writer's grace costs a copy too: under a
        // full suite's load that happened (one copy in a run); fewer than one per two
        // reads is let pass.
        let copied = live.fallbackCopies - copies
        #expect(copied * 2 < done, "\(copied) copies of the state in \(done) reads")
        #expect(live.failedReplays == 0)
        #expect(try store.chordsets(store: "big").count == 1_040)
    }

    @Test("a read that may run again meets an evicted store (it is not folded in the read), unless given its fold: the same store, at the same event, in the same generation of the state")
    func evictedStoreMet() async throws {
        let store = try Self.open(temporaryDirectory(), bound: nil)
        defer { store.close() }
        _ = try await store.createStore("songs")
        _ = try await store.execute(.addChordset(AddChordset(title: "one")), context: CommandContext(store: "songs"))
        let backend = try Self.backend(store)
        // Stopped, so that nothing puts the store back but what the test does.
        backend.evictorSlot.withLock { $0 }?.stop()
        let live = try #require(backend.live)
        let resident = try live.read { set in try #require(set[1]) }
        try Self.evict(1, in: live)
        let generation = live.read { $0.generation }
        // A fold that is not the log's, so that a read answered from it shows.
        var marked = resident
        marked.state = InMemoryState()
        var later = marked
        later.record.advance(to: resident.record.head + 1, at: resident.record.headTimestamp, logSequence: resident.record.headLogSequence + 1)
        func read(_ evicted: EvictedStoreReading) throws -> Int {
            try backend.logEnv.withReadTransaction { txn in
                try live.read { set in
                    let stores = InMemoryStores(all: set, records: LogTransactionRecords(txn: txn, log: backend.dbs.log), evicted: evicted)
                    return try stores.readingStore(named: "songs").chordsetCount()
                }
            }
        }
        #expect(try read(.foldInRead) == 1)
        #expect(throws: EvictedStoreMet.self) { try read(.throwUnlessFolded(nil)) }
        #expect(try read(.throwUnlessFolded(FoldedStore(store: marked, generation: generation))) == 0)
        #expect(throws: EvictedStoreMet.self) { try read(.throwUnlessFolded(FoldedStore(store: marked, generation: generation + 1))) }
        #expect(throws: EvictedStoreMet.self) { try read(.throwUnlessFolded(FoldedStore(store: later, generation: generation))) }
        var other = marked
        other.record = try #require(live.read { $0[0] }).record
        #expect(throws: EvictedStoreMet.self) { try read(.throwUnlessFolded(FoldedStore(store: other, generation: generation))) }
        // Through the backend: met, folded outside, read again; the fold is left to be put back.
        #expect(try store.chordsets(store: "songs").map(\.title) == ["one"])
        #expect(live.read { $0.isEvicted(1) })
        #expect(try #require(backend.residency).takeLoaded(id: 1)?.store.state.chordsetCount() == 1)
    }

    @Test("a store a reader folded before the state was replaced (a cut of the log) is not put back in the new state")
    func staleLoadDropped() async throws {
        let directory = temporaryDirectory()
        let store = try Self.open(directory, bound: nil)
        defer { store.close() }
        _ = try await store.createStore("songs")
        _ = try await store.execute(.addChordset(AddChordset(title: "before")), context: CommandContext(store: "songs"))
        let backend = try Self.backend(store)
        let live = try #require(backend.live)
        let folded = try live.read { set in try #require(set[1]) }
        try Self.evict(1, in: live)
        let generation = live.read { $0.generation }
        try backend.replaceLive(live, through: nil)
        #expect(live.read { $0.generation } == generation + 1)
        try Self.evict(1, in: live)
        let residency = StateResidency(bound: .max)
        residency.loaded(folded, generation: generation)
        backend.keepStateBound(live, residency)
        #expect(live.read { $0.isEvicted(1) })
        residency.loaded(folded, generation: generation + 1)
        backend.keepStateBound(live, residency)
        #expect(!live.read { $0.isEvicted(1) })
        // The writer does not take a load of an earlier generation either: it folds the store.
        backend.evictorSlot.withLock { $0 }?.stop()
        try Self.evict(1, in: live)
        var stale = folded
        stale.state = InMemoryState()  // what the writer must not take
        try #require(backend.residency).loaded(stale, generation: generation)
        _ = try await store.execute(.addChordset(AddChordset(title: "after")), context: CommandContext(store: "songs"))
        #expect(try store.chordsets(store: "songs").map(\.title) == ["before", "after"])
        let (state, replayed) = try LiveStateFileTests.liveAndReplay(store)
        #expect(LiveStateFileTests.difference(try backend.residentWhole(state), replayed) == nil)
    }

    @Test("a start under a bound keeps stores in memory, in id order, only while the state stays within three quarters of it: the others open evicted")
    func boundedStart() async throws {
        let directory = temporaryDirectory()
        do {
            let store = try Self.open(directory, bound: nil)
            try await LiveStateFileTests.work(store, round: 1)
            store.close()
        }
        let url = directory.appendingPathComponent(LiveStateFile.name)
        let whole = try #require(try LiveStateFile.read(url)).set
        #expect(whole.evictedCount == 0)
        #expect(whole.estimatedBytes == whole.stores.values.reduce(0) { $0 + $1.estimatedBytes })
        let bytes = ResidencyPlan.total(whole.residency())
        #expect(try #require(try LiveStateFile.read(url, bound: bytes * 2)).set.evictedCount == 0)
        #expect(try #require(try LiveStateFile.read(url, bound: 1)).set.evictedCount == 2)
        // Room for `default` alone (store ids 0 and 1 live).
        let first = try #require(whole.stores[0]).estimatedBytes * ResidencyPlan.copies
        let some = try #require(try LiveStateFile.read(url, bound: first * 4 / 3 + 4)).set
        #expect(some.stores[0]?.evicted == nil && some.stores[1]?.evicted != nil)
        do {
            let store = try Self.open(directory, bound: 1)
            defer { store.close() }
            #expect(try Self.evicted(store).count == 2)
            #expect(try store.stores().map(\.chordsets) == [0, 1])
            #expect(try store.chordsets(store: "songs-1").map(\.title) == ["in songs"])
        }
        // Without a saved state, the whole log is replayed within the bound too: the
        // stores written least recently are evicted as it goes.
        try FileManager.default.removeItem(at: url)
        let store = try Self.open(directory, bound: 1)
        defer { store.close() }
        #expect(try Self.backend(store).liveStart.withLock { $0 } == .replayed(setAside: nil))
        #expect(try Self.evicted(store) == [1])  // `default` was written last
        let (live, replayed) = try LiveStateFileTests.liveAndReplay(store)
        #expect(LiveStateFileTests.difference(try Self.backend(store).residentWhole(live), replayed) == nil)
    }

    @Test("a file that has an evicted store's state, or marks a store evicted twice, is refused")
    func damagedEvictedFrames() throws {
        var set = StoreSet(saved: [0: StoreSet.Store(record: .initialDefault, state: InMemoryState(), log: InMemoryLog(logSequences: [], commands: [:]))], lastID: 0, tokens: [:], logHead: .empty)
        set.evict([0])
        let directory = temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent(LiveStateFile.name)
        try LiveStateFile.write(set, to: url)
        let read = try #require(try LiveStateFile.read(url))
        #expect(read.set.stores[0]?.evicted == StoreCounts(chordsets: 0, chords: 0))

        var decoder = LiveStateFile.Decoder()
        var frame = LiveStateFile.FrameBytes()
        for value in [UInt64(0), 0, 0, 0, 0, LiveStateFile.foldVersion] { frame.varint(value) }
        try frame.bytes.withUnsafeBytes { try decoder.take(.head, $0, content: .body) }
        let store = withUnsafeBytes(of: UInt32(0).bigEndian) { Array($0) } + StoreRecord.initialDefault.bytes
        try store.withUnsafeBytes { try decoder.take(.store, $0, content: .body) }
        try [UInt8(0), 0].withUnsafeBytes { try decoder.take(.evicted, $0, content: .body) }
        #expect(throws: ChordStoreError.self) { try [UInt8(0), 0].withUnsafeBytes { try decoder.take(.evicted, $0, content: .body) } }
        #expect(throws: ChordStoreError.self) { try [UInt8]().withUnsafeBytes { try decoder.take(.controls, $0, content: .body) } }
    }
}
