import ChordStoreDomain
import Foundation

/// The orderings of ``ChordsetOrder`` as comparison functions, shared by both backends so
/// that they list in exactly the same order.
enum ChordsetSorting {
    /// Creation date, then id bytes (the LMDB creation index's key order).
    static func byCreation(_ a: Chordset, _ b: Chordset) -> Bool {
        if a.creationDate != b.creationDate { return a.creationDate < b.creationDate }
        return idLess(a.id, b.id)
    }

    /// Title (folded: case-, diacritic- and width-insensitive, see
    /// ``ChordStoreDomain/TitleKey``), then creation order: the LMDB title index's order.
    static func byTitle(_ a: Chordset, _ b: Chordset) -> Bool {
        let (x, y) = (TitleKey.bytes(a.title), TitleKey.bytes(b.title))
        if x != y { return x.lexicographicallyPrecedes(y) }
        return byCreation(a, b)
    }

    /// `chordsets` sorted by title, folding each title once.
    static func sortedByTitle(_ chordsets: [Chordset]) -> [Chordset] {
        chordsets.map { (key: StoreKeys.title($0), chordset: $0) }
            .sorted { $0.key.lexicographicallyPrecedes($1.key) }
            .map(\.chordset)
    }

    /// Byte-wise (memcmp) order of two ids.
    static func idLess(_ a: UUID, _ b: UUID) -> Bool {
        withUnsafeBytes(of: a.uuid) { x in
            withUnsafeBytes(of: b.uuid) { y in x.lexicographicallyPrecedes(y) }
        }
    }
}
