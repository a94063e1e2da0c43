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

    /// Title (localized, case-insensitive), then creation order.
    static func byTitle(_ a: Chordset, _ b: Chordset) -> Bool {
        switch a.title.localizedCaseInsensitiveCompare(b.title) {
        case .orderedAscending: true
        case .orderedDescending: false
        case .orderedSame: byCreation(a, b)
        }
    }

    /// Byte-wise (memcmp) order of two ids.
    static func idLess(_ a: UUID, _ b: UUID) -> Bool {
        withUnsafeBytes(of: a.uuid) { x in
            withUnsafeBytes(of: b.uuid) { y in x.lexicographicallyPrecedes(y) }
        }
    }
}
