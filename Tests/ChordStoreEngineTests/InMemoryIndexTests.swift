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
