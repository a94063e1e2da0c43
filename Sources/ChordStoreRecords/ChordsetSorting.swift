package import ChordStoreDomain
package import Foundation

/// The orderings of ``ChordsetOrder`` as comparison functions, shared by both backends so
/// that they list in exactly the same order.
package enum ChordsetSorting {
    /// Creation date, then id bytes (the LMDB creation index's key order).
    package static func byCreation(_ a: Chordset, _ b: Chordset) -> Bool {
        if a.creationDate != b.creationDate { return a.creationDate < b.creationDate }
        return idLess(a.id, b.id)
    }

    /// The chordsets of an in-memory state in `order`, at most `limit` of them (sorted on
    /// each call: reads of the past keep no indexes; queries use ``InMemoryIndex``).
    package static func chordsets(of state: InMemoryState, order: ChordsetOrder, limit: Int?) -> [Chordset] {
        let all = state.chordsetIDsInOrder.compactMap(state.chordset)
        let sorted: [Chordset] = switch order {
        case .index: all
        case .creationDate: all.sorted(by: byCreation)
        case .title: sortedByTitle(all)
        }
        return limit.map { Array(sorted.prefix($0)) } ?? sorted
    }

    /// `chordsets` sorted by title, folding each title once.
    package static func sortedByTitle(_ chordsets: [Chordset]) -> [Chordset] {
        chordsets.map { (key: StoreKeys.title($0), chordset: $0) }
            .sorted { $0.key.lexicographicallyPrecedes($1.key) }
            .map(\.chordset)
    }

    /// Byte-wise (memcmp) order of two ids.
    package static func idLess(_ a: UUID, _ b: UUID) -> Bool {
        withUnsafeBytes(of: a.uuid) { x in
            withUnsafeBytes(of: b.uuid) { y in x.lexicographicallyPrecedes(y) }
        }
    }
}
