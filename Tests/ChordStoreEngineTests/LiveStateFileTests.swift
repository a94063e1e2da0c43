import ChordStoreDomain
import ChordStoreRecords
@testable import ChordStoreEngine
import Foundation
import Synchronization
import Testing
import TestSupport

/// The live state saved at a close and in the background (`DIR/live-state`, ``LiveStateFile``): the next opening
/// loads it and replays only the log's later events, and sets it aside whenever it is
/// not the state of this log.
@Suite("Live state file")
struct LiveStateFileTests {
    private static func open(_ directory: URL, live: Bool = true, saveEvents: UInt64? = nil) throws -> ChordStore {
        var options = ChordStore.Options()
        options.seed = 5
        options.liveState = live
        if let saveEvents { options.liveStateSaveEvents = saveEvents }
        return try ChordStore.open(at: directory, options: options)
    }

    private static func backend(_ store: ChordStore) throws -> LMDBBackend {
        try #require(store.backend as? LMDBBackend)
    }

    private static func file(_ directory: URL) -> URL { directory.appendingPathComponent(LiveStateFile.name) }

    /// Events of every kind the live state keeps something of: chordsets added, renamed,
    /// moved, deleted and deleted all, chords edited, the controls chord, undo and redo in
    /// two sessions, command ids, a second store (and one made and deleted), a token.
    static func work(_ store: ChordStore, round: Int) async throws {
        let alice = CommandContext(session: "alice"), bob = CommandContext(session: "bob")
        for index in 0..<6 { _ = try await store.add("r\(round) c\(index)") }
        let chordsets = try store.chordsets()
        try await store.execute(.renameChordset(id: chordsets[0].id, title: "renamed \(round)"), context: alice)
        try await store.execute(.moveChordset(id: chordsets[1].id, toIndex: 0), context: bob)
        try await store.execute(.setChordBPM(chordID: chordsets[2].chords[3].id, bpm: 99), context: alice)
        try await store.execute(.deleteChordset(id: chordsets[3].id), context: bob)
        try await store.execute(.undo, context: bob)
        try await store.execute(.undo, context: alice)
        try await store.execute(.redo, context: alice)
        try await store.execute(.setControlsChord(SetControlsChord(bpm: 100 + Double(round), color: ChordColor(hue: 0.5, purity: 0.5, brightness: 0.5))), context: alice)
        try await store.execute(.deleteAll, context: bob)
        try await store.execute(.undo, context: bob)
        try await store.execute(.renameChordset(id: chordsets[4].id, title: "by id"), context: CommandContext(session: "alice", commandID: "cmd-\(round)"))
        _ = try await store.createStore("songs-\(round)")
        _ = try await store.createStore("gone-\(round)")
        _ = try await store.execute(.addChordset(AddChordset(title: "in songs")), context: CommandContext(session: "carol", store: "songs-\(round)"))
        _ = try await store.deleteStore("gone-\(round)")
        _ = try await store.createToken(TokenGrant(id: "t\(round)", role: .readOnly, storeID: 0, storeName: StoreName.default, secretHash: Array(repeating: UInt8(round), count: 32)))
        // Chords whose ids the client chose (indexed by id), then a delete-all left to undo
        // after the next opening (what it removed is kept for that undo).
        _ = try await store.execute(.addChordset(AddChordset(title: "chosen \(round)", chords: (0..<8).map { ChordSpec(id: UUID(), position: $0, bpm: 90) })), context: alice)
        try await store.execute(.deleteAll, context: CommandContext(session: "dave"))
    }

    /// Where two sets differ (`nil`: nowhere).
    static func difference(_ a: StoreSet, _ b: StoreSet) -> String? {
        guard a.logHead.sequence == b.logHead.sequence, a.logHead.checksum == b.logHead.checksum else { return "heads \(a.logHead) and \(b.logHead)" }
        guard a.lastStoreID() == b.lastStoreID() else { return "last store ids \(a.lastStoreID()) and \(b.lastStoreID())" }
        guard a.tokens == b.tokens else { return "tokens" }
        guard Set(a.stores.keys) == Set(b.stores.keys) else { return "store ids \(a.stores.keys.sorted()) and \(b.stores.keys.sorted())" }
        for (id, store) in a.stores {
            guard let other = b.stores[id] else { return "store \(id)" }
            guard store.record == other.record else { return "store \(id)'s record" }
            guard store.state == other.state else { return "store \(id)'s state" }
            guard store.changes == other.changes else { return "store \(id)'s changes: \(store.changes.firstDifference(from: other.changes) ?? "?")" }
            guard store.log.logSequences == other.log.logSequences, store.log.commands == other.log.commands else { return "store \(id)'s log" }
        }
        guard a.names == b.names else { return "names \(a.names) and \(b.names)" }
        return nil
    }

    /// The live state the store has, and a replay of its whole log.
    static func liveAndReplay(_ store: ChordStore) throws -> (StoreSet, StoreSet) {
        let backend = try backend(store)
        let live = try #require(backend.live).read { $0 }
        var replayed = try LogReplay.replay(backend, through: live.logHead.sequence, indexingChords: true) { _, _ in }
        replayed.logHead = live.logHead
        return (live, replayed)
    }

    @Test("a close saves the live state; the next opening loads it, replays only the events logged after it, and has the state a replay of the whole log gives")
    func savedAndLoaded() async throws {
        let directory = temporaryDirectory()
        do {
            let store = try Self.open(directory)
            #expect(try Self.backend(store).liveStart.withLock { $0 } == .replayed(setAside: nil))
            try await Self.work(store, round: 1)
            store.close()
        }
        let saved = try #require(try LiveStateFile.read(Self.file(directory)))
        #expect(saved.fold == LiveStateFile.foldVersion)
        #expect(saved.set.stores[0]?.state.chordsetCount() == 0)
        do {
            let store = try Self.open(directory)
            let at = saved.set.logHead.sequence
            #expect(at > 20)
            #expect(try Self.backend(store).liveStart.withLock { $0 } == .saved(at: at, replayed: 0))
            var (live, replayed) = try Self.liveAndReplay(store)
            #expect(Self.difference(live, replayed) == nil)
            #expect(Self.difference(saved.set, replayed) == nil)
            // The delete-all's chordsets come back from what the file kept of them.
            try await store.execute(.undo, context: CommandContext(session: "dave"))
            #expect(try store.chordsets().count == 7)
            (live, replayed) = try Self.liveAndReplay(store)
            #expect(Self.difference(live, replayed) == nil)
            store.close()
        }
        let first = try #require(try LiveStateFile.read(Self.file(directory))).set.logHead.sequence
        // Events written without live state are replayed after the saved state.
        do {
            let store = try Self.open(directory, live: false)
            try await Self.work(store, round: 2)
            store.close()
        }
        let store = try Self.open(directory)
        defer { store.close() }
        let later = try store.head().sequence
        #expect(try Self.backend(store).liveStart.withLock { $0 } == .saved(at: first, replayed: later - first))
        let (live, replayed) = try Self.liveAndReplay(store)
        #expect(Self.difference(live, replayed) == nil)
        // It decides commands as the replayed state would: an undo, a repeated command id.
        let undone = try await store.execute(.undo, context: CommandContext(session: "dave"))
        #expect(undone.mark != nil)
        let repeated = try await store.execute(.renameChordset(id: try store.chordsets()[0].id, title: "x"), context: CommandContext(session: "alice", commandID: "cmd-1"))
        #expect(repeated.logSequence <= first)
        #expect(try store.verify().isSound)
    }

    @Test("a state of several blocks loads as it was saved and as a replay gives it (blocks read, checked and decoded by the reading thread, the state built from them by the starting one)")
    func severalBlocks() async throws {
        let directory = temporaryDirectory()
        do {
            var options = ChordStore.Options()
            options.seed = 7
            options.liveState = true
            options.unsafeNoSync = true
            let store = try ChordStore.open(at: directory, options: options)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for caller in 0..<16 {
                    group.addTask {
                        for index in 0..<250 {
                            let context = CommandContext(session: "s\(caller % 3)")
                            _ = try await store.execute(.addChordset(AddChordset(title: "c\(caller)-\(index)")), context: context)
                        }
                    }
                }
                try await group.waitForAll()
            }
            store.close()
        }
        let size = LiveStateFile.size(at: Self.file(directory))
        #expect(size > 2 * LiveStateFile.blockSize, "\(size) bytes: at least three blocks")
        let saved = try #require(try LiveStateFile.read(Self.file(directory)))
        #expect(saved.set.stores[0]?.state.chordsetCount() == 4_000)
        let store = try Self.open(directory)
        defer { store.close() }
        #expect(try Self.backend(store).liveStart.withLock { $0 } == .saved(at: saved.set.logHead.sequence, replayed: 0))
        let (live, replayed) = try Self.liveAndReplay(store)
        #expect(Self.difference(live, replayed) == nil)
        #expect(Self.difference(saved.set, replayed) == nil)
    }

    /// A saved set of store `default` alone, with `events` events and one chordset's
    /// history of `history` events: lists longer than a frame holds
    /// (``LiveStateFile/frameItems``), made without folding that many events.
    static func longLists(events: Int, history: Int) -> StoreSet {
        var record = StoreRecord.initialDefault
        record.head = UInt64(events)
        record.headLogSequence = UInt64(events)
        var changes = InMemoryChanges()
        changes.noteHistory(chordset: UUID(), contentsOf: (1...UInt64(history)).map { $0 })
        let log = InMemoryLog(logSequences: (1...UInt64(events)).map { $0 }, commands: [:])
        let store = StoreSet.Store(record: record, state: InMemoryState(indexingChords: true), changes: changes, log: log)
        let head = LogHead(sequence: UInt64(events), checksum: 7, timestamp: Instant(microsecondsSince1970: 1))
        return StoreSet(saved: [0: store], lastID: 0, tokens: [:], logHead: head)
    }

    @Test("lists longer than a frame holds (a store's log positions, a chordset's history) load whole, their parts appended in order")
    func listsOverSeveralFrames() throws {
        let set = Self.longLists(events: 3 * LiveStateFile.frameItems + 5, history: LiveStateFile.frameItems + 3)
        let directory = temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try LiveStateFile.write(set, to: Self.file(directory))
        let read = try #require(try LiveStateFile.read(Self.file(directory)))
        #expect(Self.difference(read.set, set) == nil)
        #expect(read.set.stores[0]?.log.logSequences.count == 3 * LiveStateFile.frameItems + 5)
    }

    /// A frame kind written over the first frame of the second block, and the refusal's
    /// words: one the reading thread refuses (it stops there), one the decoder refuses
    /// (the reading thread has read blocks ahead and waits to hand over the next).
    static let earlyDamage: [(kind: UInt8, refusal: String)] = [
        (0xEE, "a frame of kind 238"), (LiveStateFile.Kind.head.rawValue, "has two heads"),
    ]

    @Test("a frame refused in an early block of a long file (its hashes right) ends the read, by the reading thread or by the decoder while the reading thread waits with blocks read ahead", arguments: earlyDamage)
    func damagedFrameEarly(_ damage: (kind: UInt8, refusal: String)) throws {
        // About 9 MB of log positions: nine blocks, of which the reading thread reads a few
        // ahead of the one refused.
        let set = Self.longLists(events: 3_000_000, history: 1)
        let directory = temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = Self.file(directory)
        try LiveStateFile.write(set, to: url)
        var bytes = Array(try Data(contentsOf: url))
        // The blocks after the magic: a 4-byte length, an 8-byte hash, the bytes.
        var blocks: [Range<Int>] = []
        var at = LiveStateFile.magic.count
        while at < bytes.count {
            let count = Int(bytes[at..<(at + 4)].withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) })
            blocks.append((at + 12)..<(at + 12 + count))
            at += 12 + count
        }
        #expect(blocks.count >= 8)
        bytes[blocks[1].lowerBound] = damage.kind  // the second block's first frame's kind
        var hash: UInt64 = 0
        for block in blocks {  // chained again, so that only the frame is wrong
            hash = XXHash64.hash(bytes[block], seed: hash)
            withUnsafeBytes(of: hash.littleEndian) { bytes.replaceSubrange((block.lowerBound - 8)..<block.lowerBound, with: $0) }
        }
        try Data(bytes).write(to: url)
        // Read on a thread of its own: a read that never ends (its reading thread not told
        // to stop) fails the test instead of holding the run.
        let outcome = Mutex<Result<Bool, ChordStoreError>?>(nil)
        let ended = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let result = Result { () throws(ChordStoreError) -> Bool in try LiveStateFile.read(url) != nil }
            outcome.withLock { $0 = result }
            ended.signal()
        }
        guard ended.wait(timeout: .now() + 30) == .success else {
            Issue.record("the read did not end within 30 s")
            return
        }
        var refused: ChordStoreError?
        if case .failure(let error) = outcome.withLock({ $0 }) { refused = error }
        #expect(refused?.code == .dataLoss)
        #expect(refused?.description.contains(damage.refusal) == true, "\(String(describing: refused))")
    }

    @Test("a saved state that is not this log's is set aside and the log replayed: another directory's, one past the log's end, a damaged one, an unfinished one, another layout's")
    func setAside() async throws {
        let directory = temporaryDirectory(), other = temporaryDirectory(), longer = temporaryDirectory()
        for (dir, rounds) in [(directory, 1), (other, 1), (longer, 2)] {
            let store = try Self.open(dir)
            for round in 1...rounds { try await Self.work(store, round: round) }
            store.close()
        }
        let good = try Data(contentsOf: Self.file(directory))
        func opening(with bytes: Data) throws -> String? {
            try bytes.write(to: Self.file(directory))
            let store = try Self.open(directory)
            defer { store.close() }
            let (live, replayed) = try Self.liveAndReplay(store)
            #expect(Self.difference(live, replayed) == nil)
            guard case .replayed(let why) = try Self.backend(store).liveStart.withLock({ $0 }) else { return nil }
            return why
        }
        #expect(try opening(with: try Data(contentsOf: Self.file(other)))?.contains("is not the one it was folded from") == true)
        #expect(try opening(with: try Data(contentsOf: Self.file(longer)))?.contains("past the log's last") == true)
        var damaged = good
        damaged[damaged.count / 2] ^= 0x40
        #expect(try opening(with: damaged)?.contains("damaged block") == true)
        #expect(try opening(with: good.prefix(good.count - 40))?.contains("ends inside") == true)
        var magic = good
        magic[7] = UInt8(ascii: "9")
        #expect(try opening(with: magic)?.contains("not a live state file") == true)
        // Another layout's: the same state, written as a version with other views would.
        let saved = try #require(try LiveStateFile.read(Self.file(other)))
        try LiveStateFile.write(saved.set, fold: LiveStateFile.foldVersion + 1, to: Self.file(other))
        #expect(try opening(with: try Data(contentsOf: Self.file(other)))?.contains("fold") == true)
        // The good file is used again (each opening above saved its replay at its close).
        let store = try Self.open(directory)
        defer { store.close() }
        guard case .saved = try Self.backend(store).liveStart.withLock({ $0 }) else {
            Issue.record("the saved state was not used")
            return
        }
    }

    @Test("the state is saved in the background once the log has grown by liveStateSaveEvents events since the last save; a start after a kill loads the state saved last and replays only the later events")
    func savedInTheBackground() async throws {
        let directory = temporaryDirectory()
        let background: Data
        let at: UInt64
        do {
            let store = try Self.open(directory, saveEvents: 25)
            let saver = try #require(try Self.backend(store).saverSlot.withLock { $0 })
            for index in 0..<24 { _ = try await store.add("c\(index)") }
            #expect(saver.saves == 0)
            #expect(!FileManager.default.fileExists(atPath: Self.file(directory).path))
            for index in 24..<30 { _ = try await store.add("c\(index)") }
            #expect(await eventually(timeout: .seconds(20)) { saver.saves == 1 })
            background = try Data(contentsOf: Self.file(directory))
            let saved = try #require(try LiveStateFile.read(Self.file(directory)))
            at = saved.set.logHead.sequence
            #expect((25...30).contains(at))
            #expect(saved.set.stores[0]?.state.chordsetCount() == Int(at))
            // The next save is due 25 events (or the file's bytes / 128) after that one.
            for index in 30..<40 { _ = try await store.add("c\(index)") }
            #expect(saver.saves == 1)
            store.close()
        }
        // A kill after the background save skips the close's: its file is the one left.
        try background.write(to: Self.file(directory))
        let store = try Self.open(directory)
        defer { store.close() }
        #expect(try Self.backend(store).liveStart.withLock { $0 } == .saved(at: at, replayed: 40 - at))
        #expect(try store.chordsets().count == 40)
        let (live, replayed) = try Self.liveAndReplay(store)
        #expect(Self.difference(live, replayed) == nil)
        #expect(try store.verify().isSound)
    }

    @Test("a close writes nothing when the state saved last holds the last event (the file the store opened from, or a background save's)")
    func closeSkipsAnUnchangedState() async throws {
        let directory = temporaryDirectory()
        do {
            let store = try Self.open(directory)
            for index in 0..<3 { _ = try await store.add("c\(index)") }
            store.close()
        }
        func inode() throws -> UInt64 {
            try #require(try FileManager.default.attributesOfItem(atPath: Self.file(directory).path)[.systemFileNumber] as? UInt64)
        }
        let first = try inode()
        try Self.open(directory).close()
        #expect(try inode() == first)
        let store = try Self.open(directory)
        _ = try await store.add("later")
        store.close()
        #expect(try inode() != first)
        #expect(try LiveStateFile.read(Self.file(directory))?.set.logHead.sequence == 4)
        // A background save that holds the last event: the close writes nothing either.
        let fresh = temporaryDirectory()
        let saving = try Self.open(fresh, saveEvents: 2)
        for index in 0..<2 { _ = try await saving.add("saved \(index)") }
        let saver = try #require(try Self.backend(saving).saverSlot.withLock { $0 })
        #expect(await eventually(timeout: .seconds(20)) { saver.lastSaved == 2 })
        let saved = try #require(try FileManager.default.attributesOfItem(atPath: Self.file(fresh).path)[.systemFileNumber] as? UInt64)
        saving.close()
        #expect(try FileManager.default.attributesOfItem(atPath: Self.file(fresh).path)[.systemFileNumber] as? UInt64 == saved)
    }

    @Test("verify checks the state saved last against a replay up to its event: one the next start would load wrongly is a problem, one it would set aside is not")
    func verifyChecksTheSavedState() async throws {
        let directory = temporaryDirectory()
        do {
            let store = try Self.open(directory)
            for index in 0..<6 { _ = try await store.add("c\(index)") }
            store.close()
        }
        let store = try Self.open(directory)
        defer { store.close() }
        // A state the file's checks pass (the right log position) that is not the log's,
        // a chordset renamed in it, written while the store is open (its live state is right).
        var loaded = try #require(try LiveStateFile.read(Self.file(directory)))
        let first = try #require(loaded.set.stores[0]?.state.chordsetsInOrder().first)
        let renamed = try loaded.set.withStore(try #require(loaded.set.store(id: 0))) { state, _, _ in
            state.retitleChordset(first.id, to: "not in the log")
        }
        #expect(renamed)
        try LiveStateFile.write(loaded.set, to: Self.file(directory))
        let report = try store.verify()
        #expect(report.problem?.message.contains("the state saved in") == true, "\(String(describing: report.problem))")
        // A damaged file would be set aside by the next start: verify passes.
        var bytes = try Data(contentsOf: Self.file(directory))
        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: Self.file(directory))
        #expect(try store.verify().isSound)
    }

    @Test("a log cut back and written again (a follower's, after an election) sets aside a state saved before the cut, as a kill that skipped the close's save leaves it")
    func cutLog() async throws {
        let directory = temporaryDirectory()
        do {
            let store = try Self.open(directory)
            for index in 0..<10 { _ = try await store.add("old \(index)") }
            store.close()
        }
        let stale = try Data(contentsOf: Self.file(directory))
        do {
            let store = try Self.open(directory)
            _ = try await store.truncate(after: 5, parkingIn: temporaryDirectory())
            for index in 0..<5 { _ = try await store.add("new \(index)") }
            store.close()
        }
        try stale.write(to: Self.file(directory))
        let store = try Self.open(directory)
        defer { store.close() }
        guard case .replayed(let why?) = try Self.backend(store).liveStart.withLock({ $0 }) else {
            Issue.record("the state saved before the cut was used")
            return
        }
        #expect(why.contains("event 10 is not the one it was folded from"))
        #expect(try store.chordsets().map(\.title).sorted() == (0..<5).map { "new \($0)" } + (0..<5).map { "old \($0)" })
        let (live, replayed) = try Self.liveAndReplay(store)
        #expect(Self.difference(live, replayed) == nil)
    }

    @Test("a state saved before any event loads; a leftover of a save cut short is removed")
    func emptySaved() throws {
        let directory = temporaryDirectory()
        try Self.open(directory).close()
        try Data("half a save".utf8).write(to: directory.appendingPathComponent(LiveStateFile.name + ".new"))
        let store = try Self.open(directory)
        defer { store.close() }
        #expect(try Self.backend(store).liveStart.withLock { $0 } == .saved(at: 0, replayed: 0))
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent(LiveStateFile.name + ".new").path))
    }

    @Test("the live state file of the first version with one (Tests/Fixtures/live-state1, beside format 3's log) still loads, as the state a replay of that log gives")
    func fixtureLoads() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")
        let directory = temporaryDirectory()
        try FileManager.default.copyItem(at: fixtures.appendingPathComponent("format3"), to: directory)
        try FileManager.default.copyItem(at: fixtures.appendingPathComponent("live-state1/live-state"), to: Self.file(directory))
        let saved = try #require(try LiveStateFile.read(Self.file(directory)))
        #expect(saved.set.logHead.sequence == 26)
        #expect(saved.set.stores.values.map(\.record.name).sorted() == ["default", "songs"])
        #expect(saved.set.lastStoreID() == 2)  // store `gone`, deleted
        #expect(saved.set.stores.values.map { $0.state.chordsetCount() }.reduce(0, +) == 6)
        #expect(saved.set.stores[0]?.state.chordsetsInOrder().map(\.title) == ["Verse 1", "Chorus", "Outro", "After stores"])
        let store = try Self.open(directory)
        defer { store.close() }
        #expect(try Self.backend(store).liveStart.withLock { $0 } == .saved(at: 26, replayed: 0))
        let (live, replayed) = try Self.liveAndReplay(store)
        #expect(Self.difference(live, replayed) == nil)
        #expect(Self.difference(saved.set, replayed) == nil)
    }

    @Test("the live state file of the first version to evict stores (Tests/Fixtures/live-state2, beside format 3's log: `default` evicted) still loads; the evicted store folds from the log as a replay gives it")
    func evictedFixtureLoads() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")
        let directory = temporaryDirectory()
        try FileManager.default.copyItem(at: fixtures.appendingPathComponent("format3"), to: directory)
        try FileManager.default.copyItem(at: fixtures.appendingPathComponent("live-state2/live-state"), to: Self.file(directory))
        let saved = try #require(try LiveStateFile.read(Self.file(directory)))
        #expect(saved.set.logHead.sequence == 26)
        #expect(saved.set.stores[0]?.evicted == StoreCounts(chordsets: 4, chords: 33))  // and the controls chord
        #expect(saved.set.stores[0]?.state.chordsetCount() == 0)
        #expect(saved.set.stores[1]?.evicted == nil)
        #expect(saved.set.stores[1]?.state.chordsetCount() == 2)
        let store = try Self.open(directory)
        defer { store.close() }
        #expect(try Self.backend(store).liveStart.withLock { $0 } == .saved(at: 26, replayed: 0))
        #expect(try store.chordsets(order: .index).map(\.title) == ["Verse 1", "Chorus", "Outro", "After stores"])
        let (live, replayed) = try Self.liveAndReplay(store)
        #expect(Self.difference(try Self.backend(store).residentWhole(live), replayed) == nil)
        #expect(Self.difference(try Self.backend(store).residentWhole(saved.set), replayed) == nil)
    }
}
