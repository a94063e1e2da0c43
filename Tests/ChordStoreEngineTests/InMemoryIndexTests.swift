import ChordStoreDomain
import ChordStoreRecords
import Foundation
import Testing

/// An in-memory state's sorted orders: kept in its memo from the first query that needs
/// them until a header changes.
@Suite("In-memory indexes")
struct InMemoryIndexTests {
    private func state(_ count: Int) throws -> InMemoryState {
        try InMemoryState(replaying: (0..<count).map { n in
            .chordsetAdded(Chordset(
                id: UUID(), title: "t\(count - n)", creationDate: Instant(microsecondsSince1970: Int64(n)), index: n,
                chords: (0..<8).map { Chord(id: UUID(), position: $0, bpm: 120, color: ChordColor(hue: 0, purity: 0, brightness: 0)) }))
        })
    }

    /// The ids `order`'s index gives, ascending.
    private func ids(_ index: InMemoryIndex, _ state: InMemoryState) throws -> [UUID] {
        var ids: [UUID] = []
        try index.scan(in: state, descending: false, after: nil, from: nil) { _, id in
            ids.append(id)
            return true
        }
        return ids
    }

    @Test("the creation and title orders are sorted once and kept through changes of no header; the user order keeps nothing")
    func keptUntilAHeaderChanges() throws {
        var state = try state(5)
        #expect(!state.headerMemo.holdsValue(for: .title))
        let byTitle = try ids(InMemoryIndex.of(state, order: .title), state)
        #expect(state.headerMemo.holdsValue(for: .title))
        #expect(!state.headerMemo.holdsValue(for: .creationDate))
        _ = InMemoryIndex.of(state, order: .index)
        #expect(!state.headerMemo.holdsValue(for: .index))
        let kept = state.headerMemo
        let first = try #require(state.chordset(byTitle[0]))
        try Fold.apply(.chordBPMSet(chordID: first.chords[0].id, chordsetID: first.id, bpm: 70, previous: first.chords[0].bpm), sequence: 6, to: &state)
        #expect(state.headerMemo === kept && kept.holdsValue(for: .title))
        #expect(try ids(InMemoryIndex.of(state, order: .title), state) == byTitle)
        try Fold.apply(.chordsetRenamed(id: byTitle[0], title: "zzz", previousTitle: first.title), sequence: 7, to: &state)
        #expect(!state.headerMemo.holdsValue(for: .title))
        #expect(try ids(InMemoryIndex.of(state, order: .title), state) == Array(byTitle.dropFirst()) + [byTitle[0]])
    }

    /// A new chordset created at `created` (microseconds), at the end of the user order.
    private func chordset(created: Int64, in state: InMemoryState) -> Chordset {
        Chordset(id: UUID(), title: "new \(created)", creationDate: Instant(microsecondsSince1970: created),
                 index: state.chordsetCount(),
                 chords: (0..<8).map { Chord(id: UUID(), position: $0, bpm: 120, color: ChordColor(hue: 0, purity: 0, brightness: 0)) })
    }

    /// The creation order `of` gives `state`, checked against a sort of it.
    private func creationOrder(_ state: InMemoryState) throws -> (ids: [UUID], isExtended: Bool) {
        let index = InMemoryIndex.of(state, order: .creationDate)
        let ids = try ids(index, state)
        #expect(ids == (try self.ids(InMemoryIndex(state, order: .creationDate), state)), "the kept order is a sort's")
        return (ids, index.isExtended)
    }

    @Test("after an add of the newest chordset the creation order is the one before with it at the end; any other add is sorted")
    func creationOrderExtendedAtAnAdd() throws {
        var state = try state(5)
        let before = try creationOrder(state)
        #expect(!before.isExtended)

        // The newest: extended, not sorted; a copy taken before keeps its order.
        let copy = state
        let newest = chordset(created: 100, in: state)
        try Fold.apply(.chordsetAdded(newest), sequence: 6, to: &state)
        let extended = try creationOrder(state)
        #expect(extended.isExtended && extended.ids == before.ids + [newest.id])
        #expect(try creationOrder(copy).ids == before.ids)

        // Created before the newest (an import names its dates): sorted.
        let older = chordset(created: -1, in: state)  // before the first (no tie: ties go by the random id)
        try Fold.apply(.chordsetAdded(older), sequence: 7, to: &state)
        let sorted = try creationOrder(state)
        #expect(!sorted.isExtended && sorted.ids.first == older.id)

        // Two adds with no query between, and a tempo change: extended by both.
        let between = chordset(created: 200, in: state)
        try Fold.apply(.chordsetAdded(between), sequence: 8, to: &state)
        try Fold.apply(.chordBPMSet(chordID: between.chords[0].id, chordsetID: between.id, bpm: 70, previous: 120), sequence: 9, to: &state)
        let last = chordset(created: 300, in: state)
        try Fold.apply(.chordsetAdded(last), sequence: 10, to: &state)
        let twice = try creationOrder(state)
        #expect(twice.isExtended && twice.ids == sorted.ids + [between.id, last.id])

        // A newest then an older one with no query between: sorted.
        try Fold.apply(.chordsetAdded(chordset(created: 500, in: state)), sequence: 11, to: &state)
        try Fold.apply(.chordsetAdded(chordset(created: 1, in: state)), sequence: 12, to: &state)
        let mixed = try creationOrder(state)
        #expect(!mixed.isExtended && mixed.ids.count == 11)

        // As many adds as a seed follows: extended; one more: sorted.
        var sequence: UInt64 = 13
        for n in 0..<ChordsetHeaderMemo.seedLimit {
            try Fold.apply(.chordsetAdded(chordset(created: 1_000 + Int64(n), in: state)), sequence: sequence, to: &state)
            sequence += 1
        }
        let limit = try creationOrder(state)
        #expect(limit.isExtended && limit.ids.count == 11 + ChordsetHeaderMemo.seedLimit)
        for n in 0...ChordsetHeaderMemo.seedLimit {
            try Fold.apply(.chordsetAdded(chordset(created: 2_000 + Int64(n), in: state)), sequence: sequence, to: &state)
            sequence += 1
        }
        let many = try creationOrder(state)
        #expect(!many.isExtended && many.ids.count == 12 + 2 * ChordsetHeaderMemo.seedLimit)

        // A delete-all, a query of the empty state, and its undo (more adds than a seed
        // follows, not in creation order): sorted, the same as before.
        try Fold.apply(.allDeleted(count: many.ids.count), sequence: sequence, to: &state)
        #expect(try creationOrder(state).ids.isEmpty)
        try Fold.apply(.allRestored(deletedAt: sequence, count: many.ids.count), sequence: sequence + 1, to: &state)
        sequence += 2
        let restored = try creationOrder(state)
        #expect(!restored.isExtended && restored.ids == many.ids)

        // A rename, then the newest: the seed is the order after the rename's renewal.
        try Fold.apply(.chordsetRenamed(id: last.id, title: "renamed", previousTitle: last.title), sequence: sequence, to: &state)
        _ = try creationOrder(state)
        let final = chordset(created: 5_000, in: state)
        try Fold.apply(.chordsetAdded(final), sequence: sequence + 1, to: &state)
        let afterRename = try creationOrder(state)
        #expect(afterRename.isExtended && afterRename.ids == many.ids + [final.id])

        // A delete between: the seed goes, sorted.
        try Fold.apply(.chordsetAdded(chordset(created: 6_000, in: state)), sequence: sequence + 2, to: &state)
        let deleted = try #require(state.chordset(final.id))
        try Fold.apply(.chordsetDeleted(deleted), sequence: sequence + 3, to: &state)
        #expect(state.headerMemo.isBlank, "the delete's memo carries no seed")
        let afterDelete = try creationOrder(state)
        #expect(!afterDelete.isExtended && !afterDelete.ids.contains(final.id))

        // An insert of a chordset already there carries no seed.
        let present = try #require(state.chordset(afterDelete.ids[0]))
        var again = state
        again.insertChordset(present)
        #expect(again.headerMemo.isBlank)
    }

    @Test("an undo of a delete-all in creation order extends the empty order; an add while a query sorts carries no seed of that order")
    func seedAfterUndoAndWhileSorting() throws {
        var state = try state(5)
        let before = try creationOrder(state)
        try Fold.apply(.allDeleted(count: 5), sequence: 6, to: &state)
        #expect(try creationOrder(state).ids.isEmpty)
        try Fold.apply(.allRestored(deletedAt: 6, count: 5), sequence: 7, to: &state)
        let restored = try creationOrder(state)
        #expect(restored.isExtended && restored.ids == before.ids)

        // A copy adds while a query of the shared memo's title order holds its lock.
        try Fold.apply(.chordsetRenamed(id: before.ids[0], title: "renamed", previousTitle: "t5"), sequence: 8, to: &state)
        _ = try creationOrder(state)
        var copy = state
        _ = state.headerMemo.value(for: .title) { () -> Int in
            _ = try? Fold.apply(.chordsetAdded(chordset(created: 100, in: copy)), sequence: 9, to: &copy)
            return 0
        }
        #expect(copy.chordsetCount() == 6)
        #expect(try creationOrder(copy).isExtended, "the creation order's slot was free: seeded")
        copy = state
        _ = state.headerMemo.value(for: .creationDate) { () -> Int in
            _ = try? Fold.apply(.chordsetAdded(chordset(created: 100, in: copy)), sequence: 9, to: &copy)
            return 0
        }
        #expect(copy.chordsetCount() == 6, "nothing waits for the sort")
        #expect(try !creationOrder(copy).isExtended, "the order being sorted gives no seed")
    }

    /// The title order `of` gives `state`, checked against a sort of it.
    private func titleOrder(_ state: InMemoryState) throws -> (ids: [UUID], isExtended: Bool) {
        let index = InMemoryIndex.of(state, order: .title)
        let ids = try ids(index, state)
        #expect(ids == (try self.ids(InMemoryIndex(state, order: .title), state)), "the kept order is a sort's")
        return (ids, index.isExtended)
    }

    /// A new chordset titled `title`, created at `created`, at the end of the user order.
    private func chordset(_ title: String, created: Int64, in state: InMemoryState) -> Chordset {
        var chordset = chordset(created: created, in: state)
        chordset.title = title
        return chordset
    }

    @Test("after adds the title order is the one before with each added chordset where its key falls; after a rename or a delete it is sorted")
    func titleOrderExtendedAtAnAdd() throws {
        var state = try state(5)  // titled t5 (oldest) to t1
        #expect(try !titleOrder(state).isExtended)
        _ = try creationOrder(state)

        // One add: extended, and the creation order with it.
        let middle = chordset("t3", created: 100, in: state)  // the same title as one before: after it (newer)
        try Fold.apply(.chordsetAdded(middle), sequence: 6, to: &state)
        let one = try titleOrder(state)
        #expect(one.isExtended && one.ids.firstIndex(of: middle.id) == 3)
        #expect(try creationOrder(state).isExtended)

        // Adds with no query between (the first title, the last, a tempo change between).
        let first = chordset("a", created: 200, in: state)
        try Fold.apply(.chordsetAdded(first), sequence: 7, to: &state)
        try Fold.apply(.chordBPMSet(chordID: first.chords[0].id, chordsetID: first.id, bpm: 70, previous: 120), sequence: 8, to: &state)
        let last = chordset("zz", created: 150, in: state)  // older than the newest: the creation order sorts
        try Fold.apply(.chordsetAdded(last), sequence: 9, to: &state)
        let three = try titleOrder(state)
        #expect(three.isExtended && three.ids.first == first.id && three.ids.last == last.id && three.ids.count == 8)
        #expect(try !creationOrder(state).isExtended)

        // A rename, a delete: sorted.
        try Fold.apply(.chordsetRenamed(id: first.id, title: "zzz", previousTitle: "a"), sequence: 10, to: &state)
        let renamed = try titleOrder(state)
        #expect(!renamed.isExtended && renamed.ids.last == first.id)
        try Fold.apply(.chordsetAdded(chordset("b", created: 300, in: state)), sequence: 11, to: &state)
        try Fold.apply(.chordsetDeleted(middle), sequence: 12, to: &state)
        let deleted = try titleOrder(state)
        #expect(!deleted.isExtended && !deleted.ids.contains(middle.id) && deleted.ids.count == 8)
    }

    @Test("the title order's keys, kept in one array, are the LMDB title index's keys, in its order, both ways, from a cursor")
    func titleKeys() throws {
        let state = try state(40)
        let index = InMemoryIndex.of(state, order: .title)
        var keys: [[UInt8]] = []
        try index.scan(in: state, descending: false, after: nil, from: nil) { key, id in
            let chordset = try #require(state.chordset(id))
            #expect(Array(key) == StoreKeys.title(chordset))
            keys.append(Array(key))
            return true
        }
        #expect(keys.count == 40 && keys == keys.sorted { $0.lexicographicallyPrecedes($1) })
        var after: [[UInt8]] = []
        try index.scan(in: state, descending: true, after: keys[20], from: nil) { key, _ in
            after.append(Array(key))
            return true
        }
        #expect(after == Array(keys[..<20].reversed()))
    }
}
