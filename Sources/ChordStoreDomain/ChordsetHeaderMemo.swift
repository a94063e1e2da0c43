import Synchronization

/// What a query derives from an ``InMemoryState``'s chordset headers alone (ids, titles
/// and creation dates), kept until one of them changes: the creation and title orders'
/// sorted indexes, each built by the first query that needs it and reused by every later
/// one. (The user order needs none: the state's order is that index.)
///
/// A state gets a new, empty memo at each change of a header (an add, a delete, a
/// retitle, a delete-all or its undo) and keeps it through every other change (a move, a
/// chord's bpm or colour, the controls chord), so a memo's values always describe the
/// headers of every state that holds it. Copies of a state share the memo until one of
/// them changes a header. Nothing else holds it: it goes with the last state that does,
/// and a state rebuilt from the log (a restart, a log cut back and written again) starts
/// with an empty one. Its values must not hold the state (that would be a cycle that is
/// never freed): they are read together with the state.
package final class ChordsetHeaderMemo: Sendable {
    /// One slot per order, each with its own lock: a query of one order never waits for
    /// another order's sort.
    private let byCreation = Mutex<(any Sendable)?>(nil)
    private let byTitle = Mutex<(any Sendable)?>(nil)
    private let byIndex = Mutex<(any Sendable)?>(nil)

    /// An empty memo.
    package init() {}

    /// The value kept for `order`, or `build`'s, kept from now on. `build` runs under
    /// that order's lock, so concurrent queries of a new state sort it once: the others
    /// wait for that sort rather than each doing their own. One type of value per order.
    package func value<Value: Sendable>(for order: ChordsetOrder, _ build: () -> Value) -> Value {
        withSlot(order) { slot in
            if let kept = slot as? Value { return kept }
            let value = build()
            slot = value
            return value
        }
    }

    /// Whether a value is kept for `order`, or being built (then without waiting for it).
    package func holdsValue(for order: ChordsetOrder) -> Bool {
        switch order {
        case .creationDate: byCreation.withLockIfAvailable { $0 != nil } ?? true
        case .title: byTitle.withLockIfAvailable { $0 != nil } ?? true
        case .index: byIndex.withLockIfAvailable { $0 != nil } ?? true
        }
    }

    /// Whether no value is kept.
    package var isEmpty: Bool { ChordsetOrder.allCases.allSatisfy { !holdsValue(for: $0) } }

    /// Runs `body` on `order`'s slot, under its lock.
    private func withSlot<Result: Sendable>(_ order: ChordsetOrder, _ body: (inout (any Sendable)?) -> Result) -> Result {
        switch order {
        case .creationDate: byCreation.withLock { body(&$0) }
        case .title: byTitle.withLock { body(&$0) }
        case .index: byIndex.withLock { body(&$0) }
        }
    }
}
