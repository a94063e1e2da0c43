/// The ids of the waits a ``Waiters`` orders by a threshold (a sequence number a counter
/// must reach), smallest threshold first: ``Waiters/resume(through:with:)`` takes those up
/// to a value from the front, without looking at the rest.
///
/// Thresholds mostly come in order (quorum writes register as they commit), so an insert
/// is an append; one that comes early is placed by binary search. An id whose wait ended
/// otherwise (a timeout, a cancellation) stays until it reaches the front or ``keep(where:)``
/// drops it.
struct ThresholdQueue {
    private var entries: [(threshold: UInt64, id: Int)] = []
    /// The front: entries before it were taken.
    private var start = 0

    /// How many ids it holds, those of ended waits included.
    var count: Int { entries.count - start }

    mutating func insert(_ threshold: UInt64, _ id: Int) {
        if start == entries.count {
            entries.removeAll(keepingCapacity: true)
            start = 0
        }
        guard let last = entries.last, start < entries.count, last.threshold > threshold else {
            entries.append((threshold, id))
            return
        }
        // After every entry of the same threshold: waits of one threshold end in their order.
        var low = start, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].threshold <= threshold { low = middle + 1 } else { high = middle }
        }
        entries.insert((threshold, id), at: low)
    }

    /// Removes the ids whose threshold is at most `value`, calling `body` with each,
    /// smallest threshold first.
    mutating func removeThrough(_ value: UInt64, _ body: (Int) -> Void) {
        while start < entries.count, entries[start].threshold <= value {
            body(entries[start].id)
            start += 1
        }
        if start == entries.count {
            entries.removeAll(keepingCapacity: true)
            start = 0
        } else if start >= 64, start * 2 >= entries.count {
            entries.removeFirst(start)
            start = 0
        }
    }

    /// Keeps only the ids `isLive` names, in order, in O(n).
    mutating func keep(where isLive: (Int) -> Bool) {
        entries.removeFirst(start)
        start = 0
        entries.removeAll { !isLive($0.id) }
    }

    mutating func removeAll() {
        entries.removeAll()
        start = 0
    }
}
