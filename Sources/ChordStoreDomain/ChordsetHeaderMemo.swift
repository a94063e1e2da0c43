package import Foundation
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
///
/// The memo made at an add may carry a ``Seed``: a creation order's value kept by a memo
/// before, and the headers added since, from which the new creation order can be made
/// without sorting again (an added chordset is nearly always the newest).
package final class ChordsetHeaderMemo: Sendable {
    /// What the memo made at an add knows of those before it: a creation order's value
    /// built from the headers before one or more adds (and no other change of a header),
    /// and the headers those adds put in, in the order of the adds.
    package struct Seed: Sendable {
        /// The creation order's value of a memo before the adds.
        package let creationOrder: any Sendable
        /// The added chordsets' ids and creation dates, first added first.
        package let added: [(id: UUID, created: Instant)]
    }

    /// How many adds a seed follows at most: past them, the next query sorts.
    package static let seedLimit = 64

    /// One order's slot: its value once built and, for the creation order, the seed
    /// it may be built from (dropped once the value is built: it holds an older index).
    private struct Slot: ~Copyable {
        var value: (any Sendable)?
        var seed: Seed?
    }

    /// One slot per order, each with its own lock: a query of one order never waits for
    /// another order's sort.
    private let byCreation: Mutex<Slot>
    private let byTitle = Mutex(Slot())

    /// An empty memo; with `seed`, one made at an add (see ``Seed``).
    package init(seed: Seed? = nil) {
        byCreation = Mutex(Slot(seed: seed))
    }

    /// The value kept for `order`, or `build`'s, kept from now on. `build` runs under
    /// that order's lock, so concurrent queries of a new state sort it once: the others
    /// wait for that sort rather than each doing their own. One type of value per order.
    /// The user order (`.index`) has no slot: its value is `build`'s, never kept.
    package func value<Value: Sendable>(for order: ChordsetOrder, _ build: () -> Value) -> Value {
        value(for: order) { _ in build() }
    }

    /// ``value(for:_:)``, whose `build` is given the memo's seed (the creation order
    /// only, and only at its first build).
    package func value<Value: Sendable>(for order: ChordsetOrder, _ build: (Seed?) -> Value) -> Value {
        switch order {
        case .creationDate: Self.value(in: byCreation, build)
        case .title: Self.value(in: byTitle, build)
        case .index: build(nil)
        }
    }

    /// The seed for the memo that replaces this one at the add of a chordset this
    /// memo's headers lack: from this memo's creation order if it keeps one, else from
    /// its own seed (not yet used), with the added header after the others; nil if
    /// neither, or past ``seedLimit`` adds. Waits for nothing (nil while a query builds).
    package func seed(adding id: UUID, created: Instant) -> Seed? {
        byCreation.withLockIfAvailable { slot -> Seed? in
            if let value = slot.value { return Seed(creationOrder: value, added: [(id, created)]) }
            guard let seed = slot.seed, seed.added.count < Self.seedLimit else { return nil }
            return Seed(creationOrder: seed.creationOrder, added: seed.added + [(id, created)])
        } ?? nil
    }

    /// Whether a value is kept for `order`, or being built (then without waiting for it).
    /// Never for the user order.
    package func holdsValue(for order: ChordsetOrder) -> Bool {
        switch order {
        case .creationDate: byCreation.withLockIfAvailable { $0.value != nil } ?? true
        case .title: byTitle.withLockIfAvailable { $0.value != nil } ?? true
        case .index: false
        }
    }

    /// Whether no value is kept.
    package var isEmpty: Bool { ChordsetOrder.allCases.allSatisfy { !holdsValue(for: $0) } }

    /// Whether it keeps no value and carries no seed: nothing about it depends on the
    /// headers it was made for.
    package var isBlank: Bool { isEmpty && byCreation.withLockIfAvailable { $0.seed == nil } ?? false }

    /// The value `slot` keeps, or `build`'s, kept there from now on (built under its
    /// lock, given the slot's seed, which is then dropped).
    private static func value<Value: Sendable>(in slot: borrowing Mutex<Slot>, _ build: (Seed?) -> Value) -> Value {
        slot.withLock { slot in
            if let kept = slot.value as? Value { return kept }
            let value = build(slot.seed)
            slot.value = value
            slot.seed = nil
            return value
        }
    }
}
