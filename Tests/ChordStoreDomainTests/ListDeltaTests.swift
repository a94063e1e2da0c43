import ChordStoreDomain
import Foundation
import Testing

/// The deltas between two lists, applied in order, turn the first into the second.
@Suite("List deltas")
struct ListDeltaTests {
    static func chordset(_ n: Int, title: String = "") -> Chordset {
        var id = uuid_t(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &id) { $0.storeBytes(of: UInt32(n).bigEndian, toByteOffset: 12, as: UInt32.self) }
        return Chordset(id: UUID(uuid: id), title: title, creationDate: Instant(microsecondsSince1970: 0), index: 0, chords: [])
    }

    @Test("random pairs of lists: applying the deltas gives the new list", arguments: [1, 2, 3] as [UInt64])
    func property(seed: UInt64) {
        var g = SplitMix64(seed: seed)
        for _ in 0..<500 {
            let pool = (0..<40).map { Self.chordset($0, title: "t\(g.next() % 3)") }
            let old = pool.filter { _ in g.next() % 2 == 0 }.shuffled(using: &g)
            var new = pool.filter { _ in g.next() % 2 == 0 }.shuffled(using: &g)
            for i in new.indices where g.next() % 5 == 0 { new[i].title += "!" }
            var list = old
            let deltas = ListDelta.changes(from: old, to: new)
            ListDelta.apply(deltas, to: &list)
            #expect(list == new)
            if list != new { return }
        }
    }

    @Test("no change, no deltas; one move is one move")
    func minimal() {
        let list = (0..<5).map { Self.chordset($0) }
        #expect(ListDelta.changes(from: list, to: list).isEmpty)
        var moved = list
        moved.insert(moved.remove(at: 4), at: 1)
        #expect(ListDelta.changes(from: list, to: moved) == [.move(from: 4, to: 1)])
    }
}
