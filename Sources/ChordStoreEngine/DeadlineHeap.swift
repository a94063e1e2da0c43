/// The deadlines of a ``Waiters``: a binary min-heap of (instant, wait id).
struct DeadlineHeap {
    private var entries: [(at: ContinuousClock.Instant, id: Int)] = []

    /// The earliest deadline.
    var first: (at: ContinuousClock.Instant, id: Int)? { entries.first }

    mutating func push(_ at: ContinuousClock.Instant, _ id: Int) {
        entries.append((at, id))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].at < entries[parent].at else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// How many deadlines it holds.
    var count: Int { entries.count }

    /// Removes the earliest deadline.
    mutating func pop() {
        guard !entries.isEmpty else { return }
        entries.swapAt(0, entries.count - 1)
        entries.removeLast()
        siftDown(from: 0)
    }

    /// Keeps only the deadlines of the waits `isLive` names, in O(n).
    mutating func keep(where isLive: (Int) -> Bool) {
        entries.removeAll { !isLive($0.id) }
        for parent in stride(from: entries.count / 2 - 1, through: 0, by: -1) { siftDown(from: parent) }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1, right = left + 1
            var least = parent
            if left < entries.count, entries[left].at < entries[least].at { least = left }
            if right < entries.count, entries[right].at < entries[least].at { least = right }
            guard least != parent else { return }
            entries.swapAt(parent, least)
            parent = least
        }
    }

    mutating func removeAll() { entries.removeAll() }
}
