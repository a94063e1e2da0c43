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
/// The memo made at an add may carry a ``Seed`` per order: the order's value kept by a
/// memo before, and the headers added since, from which the new order can be made
/// without sorting again (an added chordset is nearly always the newest, and goes at the
/// creation order's end; the title order takes each where its key falls).
package final class ChordsetHeaderMemo: Sendable {
    /// One added chordset's header.
    package struct Header: Sendable {
        /// The chordset's id.
        package let id: UUID
        /// Its title.
        package let title: String
        /// Its creation date.
        package let created: Instant
    }

    /// What the memo made at an add knows of those before it, for one order: the order's
    /// value built from the headers before one or more adds (and no other change of a
    /// header), and the headers those adds put in, in the order of the adds.
    package struct Seed: Sendable {
        /// The order's value of a memo before the adds.
        package let before: any Sendable
        /// The added chordsets' headers, first added first.
        package let added: [Header]
    }

    /// The seeds of a memo made at an add: one per order that had a value or a seed.
    package struct Seeds: Sendable {
        var creation: Seed?
        var title: Seed?
        /// Whether there is none.
        package var isEmpty: Bool { creation == nil && title == nil }
    }

    /// How many adds a seed follows at most: past them, the next query sorts.
    package static let seedLimit = 64

    /// One order's slot: its value once built, and the seed it may be built from
    /// (dropped once the value is built: it holds an older index).
    private struct Slot: ~Copyable {
        var value: (any Sendable)?
        var seed: Seed?
    }

    /// One slot per order, each with its own lock: a query of one order never waits for
    /// another order's sort.
    private let byCreation: Mutex<Slot>
    private let byTitle: Mutex<Slot>

    /// An empty memo; with `seeds`, one made at an add (see ``Seed``).
    package init(seeds: Seeds = Seeds()) {
        byCreation = Mutex(Slot(seed: seeds.creation))
        byTitle = Mutex(Slot(seed: seeds.title))
    }

    /// The value kept for `order`, or `build`'s, kept from now on. `build` runs under
    /// that order's lock, so concurrent queries of a new state sort it once: the others
    /// wait for that sort rather than each doing their own. One type of value per order.
    /// The user order (`.index`) has no slot: its value is `build`'s, never kept.
    package func value<Value: Sendable>(for order: ChordsetOrder, _ build: () -> Value) -> Value {
        value(for: order, seeded: { _ in build() })
    }

    /// ``value(for:_:)``, whose `build` is given the order's seed, if the memo has one
    /// (only at the order's first build).
    package func value<Value: Sendable>(for order: ChordsetOrder, seeded build: (Seed?) -> Value) -> Value {
        switch order {
        case .creationDate: Self.value(in: byCreation, build)
        case .title: Self.value(in: byTitle, build)
        case .index: build(nil)
        }
    }

    /// The seeds for the memo that replaces this one at the add of a chordset (the
    /// caller makes sure this memo's headers lack it): for each order, from this memo's
    /// value if it keeps one, else from its own seed (not yet used), with the added header
    /// after the others; none for an order with neither, or past ``seedLimit`` adds. Waits
    /// for nothing (none for an order a query is building).
    package func seeds(adding header: Header) -> Seeds {
        Seeds(creation: Self.seed(in: byCreation, adding: header), title: Self.seed(in: byTitle, adding: header))
    }

    /// The seed for `slot`'s order in the memo made at the add of `header`.
    private static func seed(in slot: borrowing Mutex<Slot>, adding header: Header) -> Seed? {
        slot.withLockIfAvailable { slot -> Seed? in
            if let value = slot.value { return Seed(before: value, added: [header]) }
            guard let seed = slot.seed, seed.added.count < seedLimit else { return nil }
            return Seed(before: seed.before, added: seed.added + [header])
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

    /// Whether it keeps no value and carries no seed (and no query is building one):
    /// nothing about it depends on the headers it was made for.
    package var isBlank: Bool { Self.isBlank(byCreation) && Self.isBlank(byTitle) }

    /// Whether `slot` keeps no value and carries no seed, and no query is building one.
    private static func isBlank(_ slot: borrowing Mutex<Slot>) -> Bool {
        slot.withLockIfAvailable { $0.value == nil && $0.seed == nil } ?? false
    }

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
