import Synchronization

/// What a query derives from an ``InMemoryState``'s chordset headers alone (ids, titles,
/// creation dates and the user order), kept until one of them changes: each order's
/// sorted index, built by the first query that needs it and reused by every later one.
///
/// A state gets a new, empty memo at each change of a header (an add, a delete, a move, a
/// retitle, a delete-all or its undo) and keeps it through every other change (a chord's
/// bpm or colour, the controls chord), so a memo's values always describe the headers of
/// every state that holds it. Copies of a state share the memo until one of them changes
/// a header. Nothing else holds it: it goes with the last state that does, and a state
/// rebuilt from the log (a restart, a log cut back and written again) starts with an
/// empty one. Its values must not hold the state (that would be a cycle that is never
/// freed): they are read together with the state.
public final class ChordsetHeaderMemo: Sendable {
    private let values = Mutex<[ChordsetOrder: any Sendable]>([:])

    /// An empty memo.
    public init() {}

    /// The value kept for `order`, or `build`'s, kept from now on. `build` runs under
    /// the memo's lock, so concurrent queries of a new state sort it once: the others
    /// wait for that sort rather than each doing their own.
    public func value<Value: Sendable>(for order: ChordsetOrder, _ build: () -> Value) -> Value {
        values.withLock { values in
            if let kept = values[order] as? Value { return kept }
            let value = build()
            values[order] = value
            return value
        }
    }

    /// Whether a value is kept for `order`.
    public func holdsValue(for order: ChordsetOrder) -> Bool {
        values.withLock { $0[order] != nil }
    }

    /// Whether no value is kept.
    public var isEmpty: Bool { values.withLock { $0.isEmpty } }
}
