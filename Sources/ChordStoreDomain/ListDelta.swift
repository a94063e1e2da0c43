/// One change to an ordered list of chordsets, as `NSFetchedResultsController` reports
/// them; applied in order, a sequence of deltas turns one list into another.
public enum ListDelta: Sendable, Hashable {
    /// Insert the chordset at the index.
    case insert(Chordset, at: Int)
    /// Delete the item at the index.
    case delete(at: Int)
    /// Move the item at `from` to `to` (remove, then insert).
    case move(from: Int, to: Int)
    /// Replace the item at the index.
    case update(Chordset, at: Int)

    /// The deltas that turn `old` into `new` (items are told apart by id): deletes from
    /// the end, then inserts and moves front to back, then updates of changed items.
    /// O(n²) in the worst case, so live queries cap their window.
    public static func changes(from old: [Chordset], to new: [Chordset]) -> [ListDelta] {
        var deltas: [ListDelta] = []
        let newIDs = Set(new.map(\.id))
        var current = old.map(\.id)
        for index in current.indices.reversed() where !newIDs.contains(current[index]) {
            deltas.append(.delete(at: index))
            current.remove(at: index)
        }
        var remaining = Set(current)
        for (index, chordset) in new.enumerated() {
            if index < current.count, current[index] == chordset.id { continue }
            if remaining.contains(chordset.id), let from = current[index...].firstIndex(of: chordset.id) {
                current.remove(at: from)
                current.insert(chordset.id, at: index)
                deltas.append(.move(from: from, to: index))
            } else {
                current.insert(chordset.id, at: index)
                remaining.insert(chordset.id)
                deltas.append(.insert(chordset, at: index))
            }
        }
        let before = Dictionary(old.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        for (index, chordset) in new.enumerated() {
            if let previous = before[chordset.id], previous != chordset { deltas.append(.update(chordset, at: index)) }
        }
        return deltas
    }

    /// Applies `deltas` to `list`, in order; `false` (the list as far as it got) when one
    /// does not fit it: the list is not the one the deltas were computed from.
    @discardableResult
    public static func apply(_ deltas: [ListDelta], to list: inout [Chordset]) -> Bool {
        for delta in deltas {
            switch delta {
            case .insert(let chordset, let index):
                guard index <= list.count else { return false }
                list.insert(chordset, at: index)
            case .delete(let index):
                guard list.indices.contains(index) else { return false }
                list.remove(at: index)
            case .move(let from, let to):
                guard list.indices.contains(from), list.indices.contains(to) else { return false }
                list.insert(list.remove(at: from), at: to)
            case .update(let chordset, let index):
                guard list.indices.contains(index) else { return false }
                list[index] = chordset
            }
        }
        return true
    }
}
