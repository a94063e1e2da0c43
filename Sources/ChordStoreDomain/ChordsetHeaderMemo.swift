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

    /// An empty memo.
    package init() {}

    /// The value kept for `order`, or `build`'s, kept from now on. `build` runs under
    /// that order's lock, so concurrent queries of a new state sort it once: the others
    /// wait for that sort rather than each doing their own. One type of value per order.
    /// The user order (`.index`) has no slot: its value is `build`'s, never kept.
    package func value<Value: Sendable>(for order: ChordsetOrder, _ build: () -> Value) -> Value {
        switch order {
        case .creationDate: Self.value(in: byCreation, build)
        case .title: Self.value(in: byTitle, build)
        case .index: build()
        }
    }

    /// Whether a value is kept for `order`, or being built (then without waiting for it).
    /// Never for the user order.
    package func holdsValue(for order: ChordsetOrder) -> Bool {
        switch order {
        case .creationDate: byCreation.withLockIfAvailable { $0 != nil } ?? true
        case .title: byTitle.withLockIfAvailable { $0 != nil } ?? true
        case .index: false
        }
    }

    /// Whether no value is kept.
    package var isEmpty: Bool { ChordsetOrder.allCases.allSatisfy { !holdsValue(for: $0) } }

    /// The value `slot` keeps, or `build`'s, kept there from now on (built under its lock).
    private static func value<Value: Sendable>(in slot: borrowing Mutex<(any Sendable)?>, _ build: () -> Value) -> Value {
        slot.withLock { slot in
            if let kept = slot as? Value { return kept }
            let value = build()
            slot = value
            return value
        }
    }
}
