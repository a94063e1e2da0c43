import ChordStoreDomain
import ChordStoreRecords
@testable import ChordStoreEngine
import Foundation
import LMDB
import Synchronization
import Testing

/// The second half of a rebuild: the views written in key order from a replay.
@Suite("View loader")
struct ViewLoaderTests {
    @Test("an id held as a dictionary key sorts as the id's bytes do, the views' key order")
    func keySortOrder() {
        var generator = SplitMix64(seed: 11)
        let ids = (0..<2_000).map { _ in UUID.version7(at: Instant(microsecondsSince1970: Int64(generator.next() % 1_000_000_000)), using: &generator) }
            + (0..<200).map { _ in UUID() }
        for id in ids { #expect(StoreKeys.sortKey(IDKey(id)) == StoreKeys.sortKey(id)) }
        let byKey = ids.sorted { StoreKeys.sortKey(IDKey($0)) < StoreKeys.sortKey(IDKey($1)) }
        let byBytes = ids.sorted { StoreKeys.id($0).lexicographicallyPrecedes(StoreKeys.id($1)) }
        #expect(byKey == byBytes)
    }

    @Test("keys sort as LMDB compares them: memcmp of the common length, then the shorter first")
    func keyOrder() {
        var generator = SystemRandomNumberGenerator()
        var keys: [[UInt8]] = [[], [0], [0, 0], [255], [1, 2, 3], [1, 2], [1, 2, 4]]
        for _ in 0..<500 {
            let count = Int.random(in: 0..<6, using: &generator)
            keys.append((0..<count).map { _ in UInt8.random(in: 0...3, using: &generator) })
        }
        for a in keys.prefix(120) {
            for b in keys.prefix(120) {
                #expect(ViewLoader.precedes(a, b) == a.lexicographicallyPrecedes(b), "\(a) \(b)")
            }
        }
        #expect(keys.sorted { ViewLoader.precedes($0, $1) } == keys.sorted { $0.lexicographicallyPrecedes($1) })
        // Keys longer than the 24-byte prefix the loader sorts by first, and keys that are
        // prefixes of others (zeros past the end): the same order.
        var long: [[UInt8]] = [Array(repeating: 0, count: 24), Array(repeating: 0, count: 25), [0], []]
        for _ in 0..<400 {
            let count = Int.random(in: 20..<32, using: &generator)
            long.append((0..<count).map { _ in UInt8.random(in: 0...1, using: &generator) })
        }
        let byPrefix = long.sorted { a, b in
            let (pa, pb) = (ViewLoader.prefix(a), ViewLoader.prefix(b))
            return pa != pb ? pa < pb : ViewLoader.precedes(a, b)
        }
        #expect(byPrefix == long.sorted { $0.lexicographicallyPrecedes($1) })
    }

    @Test("a rebuild gives back the sessions' stacks, links and histories the commits wrote, over three sessions with undo and redo")
    func rebuildKeepsSessions() async throws {
        let store = try EngineKind.lmdb.makeStore(seed: 3)
        defer { store.close() }
        let sessions = ["alice", "bob", "carol"].map { CommandContext(session: $0) }
        var ids: [UUID] = []
        for round in 0..<60 {
            let context = sessions[round % 3]
            switch round % 5 {
            case 0, 1:
                let recorded = try await store.execute(.addChordset(AddChordset(title: "set \(round)")), context: context)
                if case .chordsetAdded(let chordset) = recorded.event { ids.append(chordset.id) }
            case 2: _ = try? await store.execute(.renameChordset(id: ids[round % ids.count], title: "renamed \(round)"), context: context)
            // A rename of a chordset an undo removed, or an undo or redo that conflicts with
            // another session's change, is refused: fine.
            case 3: _ = try? await store.execute(.undo, context: context)
            default: _ = try? await store.execute(.redo, context: context)
            }
        }
        func histories() throws -> [[UInt64]] {
            try sessions.flatMap { context in
                try [0, 1, 30, 59].map { after in try store.history(session: context.session, after: after, limit: 7).map(\.sequence) }
            }
        }
        let before = try sessions.map { try store.session($0.session) }
        let beforeHistories = try histories()
        let dump = try store.backend.withSnapshot(store: "") { try $0.changesDump() }
        #expect(!dump.sessionHistory.isEmpty)
        try await store.rebuild()
        #expect(try sessions.map { try store.session($0.session) } == before)
        #expect(try histories() == beforeHistories)
        #expect(try store.backend.withSnapshot(store: "") { try $0.changesDump() } == dump)
        #expect(try store.verify().isSound)
    }

    @Test("a rebuild indexes every chord where it is (the controls chord too), and lists and reads every chordset as the commits left them")
    func rebuildKeepsChordsAndOrders() async throws {
        let store = try EngineKind.lmdb.makeStore(seed: 11)
        defer { store.close() }
        var added: [Chordset] = []
        for n in 0..<40 {
            let recorded = try await store.execute(.addChordset(AddChordset(title: "set \((n * 7) % 40)")))
            if case .chordsetAdded(let chordset) = recorded.event { added.append(chordset) }
        }
        _ = try await store.execute(.moveChordset(id: added[3].id, toIndex: 30))
        _ = try await store.execute(.deleteChordset(id: added[5].id))
        _ = try await store.execute(.renameChordset(id: added[9].id, title: "Aardvark"))
        _ = try await store.execute(.setChordBPM(chordID: added[12].chords[4].id, bpm: 61))
        _ = try await store.execute(.setControlsChord(SetControlsChord(bpm: 90, color: ChordColor(hue: 0.5, purity: 0.5, brightness: 1))))
        let controls = try #require(try store.controlsChord())
        let chordIDs = added.flatMap { $0.chords.map(\.id) } + [controls.id]
        func located() throws -> [String] {
            try chordIDs.map { id in
                guard let (chord, chordset) = try store.chord(id) else { return "none" }
                return "\(chord.id) \(chord.position) \(chord.bpm) \(chordset.map(\.uuidString) ?? "controls")"
            }
        }
        let orders: [ChordsetOrder] = [.creationDate, .index, .title]
        let before = try orders.map { try store.chordsets(order: $0) }
        let chordsBefore = try located()
        #expect(chordsBefore.filter { $0 == "none" }.count == 8)  // the deleted chordset's
        try await store.rebuild()
        #expect(try orders.map { try store.chordsets(order: $0) } == before)
        #expect(try located() == chordsBefore)
        #expect(try store.profile().chords == 39 * 8 + 1)
        #expect(try store.verify().isSound)
    }

    @Test("a rebuild says it is done (its total) once, when the views are loaded, not when the replay ends")
    func rebuildProgressEndsOnce() async throws {
        let store = try EngineKind.lmdb.makeStore(seed: 12)
        defer { store.close() }
        for n in 0..<30 { _ = try await store.execute(.addChordset(AddChordset(title: "set \(n)"))) }
        let reports = Mutex<[(UInt64, UInt64)]>([])
        try await store.rebuild { done, total in reports.withLock { $0.append((done, total)) } }
        let seen = reports.withLock { $0 }
        let last = try #require(seen.last)
        #expect(last == (30, 30))
        #expect(seen.dropLast().allSatisfy { $0.0 < $0.1 && $0.1 == 30 })
        #expect(seen.count >= 2)  // the replay's, then the end
    }

    /// What the views of a test's log hold.
    enum Shape: String, CaseIterable, Sendable {
        case adds, edits, deleteAll = "delete-all"
    }

    @Test("views rebuilt after a machine went down: the estimate covers what the load takes and is not far above it, so the map grows once and the load runs once", arguments: Shape.allCases)
    func rebuildGrowsTheMapOnce(shape: Shape) async throws {
        let directory = temporaryDirectory()
        var options = ChordStore.Options()
        options.initialMapSize = 64 << 10  // the views' map would double several times to hold them
        do {
            let store = try ChordStore.open(at: directory, options: options)
            var added: [Chordset] = []
            for n in 0..<1_200 {
                let recorded = try await store.execute(.addChordset(AddChordset(title: "chordset \(n) of a test of the map's growth")))
                if case .chordsetAdded(let chordset) = recorded.event { added.append(chordset) }
            }
            switch shape {
            case .adds: break
            case .edits:
                for (n, chordset) in added.enumerated() {
                    let context = CommandContext(session: "session \(n % 40)")
                    _ = try await store.execute(.setChordBPM(chordID: chordset.chords[n % 8].id, bpm: Double(60 + n % 100)), context: context)
                    _ = try await store.execute(.renameChordset(id: chordset.id, title: "renamed \(n)"), context: context)
                }
            case .deleteAll:
                _ = try await store.execute(.deleteAll)
                for n in 0..<50 { _ = try await store.execute(.addChordset(AddChordset(title: "after \(n)"))) }
            }
            store.close()
        }
        try "another-boot".write(to: directory.appendingPathComponent("views/open"), atomically: true, encoding: .utf8)
        let store = try ChordStore.open(at: directory, options: options)
        defer { store.close() }
        let backend = try #require(store.backend as? LMDBBackend)
        let loads = backend.viewLoads.load(ordering: .relaxed)
        #expect(loads == 1)
        let replay = try LogReplay.replay(backend, through: try backend.logHead().sequence) { _, _ in }
        let estimated = ViewLoader.estimatedBytes(replay)
        let pages = try backend.viewsEnv.withReadTransaction { txn in try backend.dbs.views.reduce(0) { try $0 + txn.stat($1).pages } }
        let used = pages * backend.viewsEnv.pageSize
        #expect(estimated >= used, "estimated \(estimated) bytes, the views take \(used)")
        #expect(estimated <= used * 8 / 5 + (1 << 20), "estimated \(estimated) bytes, the views take \(used)")
        #expect(try store.verify().isSound)
    }
}
