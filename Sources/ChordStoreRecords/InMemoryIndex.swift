public import ChordStoreDomain
package import Foundation

/// One order's index over an in-memory state: the keys the LMDB indexes use (so cursors
/// and title folding mean the same), sorted once. Build it after the state's headers
/// change and reuse it for every query until the next change (``InMemoryIndex/of(_:order:)``
/// keeps it in the state's ``ChordsetHeaderMemo``), and scan it together with the state it
/// was built from.
///
/// What it keeps per chordset: nothing for the user order (the state's order is that
/// index: a chordset's key is its position), 24 bytes for the creation order (the date
/// and id its key is made of, made again as it is read), and for the title order the key
/// (a folded title is costly to make again; all of them in one array, so that dropping
/// the index frees three arrays, not one per chordset), where it ends, and the id.
public struct InMemoryIndex: Sendable {
    /// The order this index sorts by.
    public let order: ChordsetOrder
    private let entries: Entries
    /// Whether it was made from the order before one or more adds and the added
    /// chordsets (see ``of(_:order:)``) rather than sorted.
    package let isExtended: Bool

    private enum Entries: Sendable {
        /// The state's own order: nothing kept.
        case userOrder
        /// The chordsets by creation, each as its key's parts.
        case creation([(created: Instant, id: UUID)])
        /// The chordsets by title: their keys one after the other, where each ends, the ids.
        case title(keys: [UInt8], ends: [Int], ids: [UUID])
    }

    /// Sorts `state`'s chordsets by `order`'s keys. Reads only each chordset's id, title
    /// and creation date (not its chords); the creation order sorts fixed-size integers
    /// that compare as its keys do.
    public init(_ state: InMemoryState, order: ChordsetOrder) {
        self.order = order
        isExtended = false
        switch order {
        case .index:
            entries = .userOrder
        case .title:
            var keyed: [(key: [UInt8], id: UUID)] = []
            keyed.reserveCapacity(state.chordsetCount())
            state.forEachChordsetHeader { id, title, created in keyed.append((StoreKeys.title(title, created, id), id)) }
            keyed.sort { $0.key.lexicographicallyPrecedes($1.key) }
            var keys: [UInt8] = []
            keys.reserveCapacity(keyed.reduce(0) { $0 + $1.key.count })
            var ends: [Int] = []
            ends.reserveCapacity(keyed.count)
            for entry in keyed {
                keys.append(contentsOf: entry.key)
                ends.append(keys.count)
            }
            entries = .title(keys: keys, ends: ends, ids: keyed.map(\.id))
        case .creationDate:
            var sortable: [(time: Int64, high: UInt64, low: UInt64, id: UUID)] = []
            sortable.reserveCapacity(state.chordsetCount())
            state.forEachChordsetHeader { id, _, created in
                let (high, low) = StoreKeys.sortKey(id)
                sortable.append((created.microsecondsSince1970, high, low, id))
            }
            sortable.sort { ($0.time, $0.high, $0.low) < ($1.time, $1.high, $1.low) }
            entries = .creation(sortable.map { (Instant(microsecondsSince1970: $0.time), $0.id) })
        }
    }

    /// `order`'s index of `state`: the one its ``InMemoryState/headerMemo`` keeps, or a new
    /// one, kept there for the queries after (until a header changes). The user order's
    /// index keeps nothing, and is not kept.
    ///
    /// After adds (the memo's ``ChordsetHeaderMemo/Seed``), an order is the one before
    /// them, copied, with the added chordsets put in: at the creation order's end if they
    /// are the newest (the common case: an add's creation date is its time; else it is
    /// sorted), where each one's key falls in the title order.
    package static func of(_ state: InMemoryState, order: ChordsetOrder) -> InMemoryIndex {
        if order == .index { return InMemoryIndex(state, order: .index) }
        return state.headerMemo.value(for: order, seeded: { seed in
            // The count first (a net: the memo renews at every other change of a header).
            if let seed, let before = seed.before as? InMemoryIndex,
               let count = before.count, count + seed.added.count == state.chordsetCount(),
               let extended = before.adding(seed.added) {
                return extended
            }
            return InMemoryIndex(state, order: order)
        })
    }

    private init(order: ChordsetOrder, entries: Entries, isExtended: Bool) {
        self.order = order
        self.entries = entries
        self.isExtended = isExtended
    }

    /// How many chordsets it sorts (nil for the user order, which keeps nothing).
    private var count: Int? {
        switch entries {
        case .userOrder: nil
        case .creation(let sorted): sorted.count
        case .title(_, _, let ids): ids.count
        }
    }

    /// This order with the chordsets of `added` put in, in their order: at the creation
    /// order's end, if each one's key sorts after every key before it; in the title order,
    /// where each one's key falls (a copy of the keys after it per add). Nil if not (a
    /// creation order they do not extend, a key already there) and for the user order.
    private func adding(_ added: [ChordsetHeaderMemo.Header]) -> InMemoryIndex? {
        switch entries {
        case .userOrder:
            return nil
        case .creation(var sorted):
            sorted.reserveCapacity(sorted.count + added.count)
            for header in added {
                if let last = sorted.last {
                    let (lastHigh, lastLow) = StoreKeys.sortKey(last.id)
                    let (high, low) = StoreKeys.sortKey(header.id)
                    let lastKey = (last.created.microsecondsSince1970, lastHigh, lastLow)
                    guard lastKey < (header.created.microsecondsSince1970, high, low) else { return nil }
                }
                sorted.append((header.created, header.id))
            }
            return InMemoryIndex(order: order, entries: .creation(sorted), isExtended: true)
        case .title(var keys, var ends, var ids):
            for header in added {
                let key = StoreKeys.title(header.title, header.created, header.id)
                // The first position whose key sorts after the new one.
                let low = Self.firstIndex(count: ids.count) { key.lexicographicallyPrecedes(Self.titleKey(at: $0, keys, ends)) }
                if low > 0, Self.titleKey(at: low - 1, keys, ends).elementsEqual(key) { return nil }
                let start = low == 0 ? 0 : ends[low - 1]
                keys.insert(contentsOf: key, at: start)
                for position in low..<ends.count { ends[position] += key.count }
                ends.insert(start + key.count, at: low)
                ids.insert(header.id, at: low)
            }
            return InMemoryIndex(order: order, entries: .title(keys: keys, ends: ends, ids: ids), isExtended: true)
        }
    }

    /// See ``OrderedChordsets/scan(_:descending:after:from:_:)``: binary searches to the
    /// cursor or the start key, then walks the sorted keys. `state` is the state the index
    /// was built from (the user order reads its ids from it).
    package func scan(
        in state: InMemoryState, descending: Bool, after cursor: [UInt8]?, from start: [UInt8]?,
        _ body: (UnsafeRawBufferPointer, UUID) throws -> Bool
    ) throws {
        switch entries {
        case .userOrder:
            let ids = state.chordsetIDsInOrder
            try Self.scan(count: ids.count, descending: descending, after: cursor, from: start,
                          key: { KeyBytes.index($0) }, id: { ids[$0] }, body)
        case .creation(let sorted):
            try Self.scan(count: sorted.count, descending: descending, after: cursor, from: start,
                          key: { KeyBytes.creation(sorted[$0].created, sorted[$0].id) }, id: { sorted[$0].id }, body)
        case .title(let keys, let ends, let ids):
            try Self.scan(count: ids.count, descending: descending, after: cursor, from: start,
                          key: { Self.titleKey(at: $0, keys, ends) }, id: { ids[$0] }, body)
        }
    }

    /// The title key at `position` of `keys`, laid one after the other, each ending where
    /// `ends` says.
    private static func titleKey(at position: Int, _ keys: [UInt8], _ ends: [Int]) -> ArraySlice<UInt8> {
        keys[(position == 0 ? 0 : ends[position - 1])..<ends[position]]
    }

    /// The first of `count` positions that satisfies `isAtOrAfter` (false, then true from
    /// some position on), or `count` if none does: a binary search.
    private static func firstIndex(count: Int, where isAtOrAfter: (Int) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if isAtOrAfter(middle) { high = middle } else { low = middle + 1 }
        }
        return low
    }

    /// The walk over `count` sorted entries, each read through `key` and `id`.
    private static func scan<Key: ContiguousBytes>(
        count: Int, descending: Bool, after cursor: [UInt8]?, from start: [UInt8]?,
        key: (Int) -> Key, id: (Int) -> UUID,
        _ body: (UnsafeRawBufferPointer, UUID) throws -> Bool
    ) throws {
        var cursor = cursor
        if let resume = cursor, let start,
           descending ? start.lexicographicallyPrecedes(resume) : resume.lexicographicallyPrecedes(start) {
            cursor = nil  // the start key lies beyond the cursor
        }
        let start = start.flatMap { $0.isEmpty ? nil : $0 }
        /// The first position whose key satisfies `isAtOrAfter` (monotone over the keys).
        func firstIndex(_ isAtOrAfter: (UnsafeRawBufferPointer) -> Bool) -> Int {
            Self.firstIndex(count: count) { key($0).withUnsafeBytes(isAtOrAfter) }
        }
        if descending {
            // The entries below the cursor (or the start), last first.
            var position = count
            if let bound = cursor ?? start { position = firstIndex { !$0.lexicographicallyPrecedes(bound) } }
            while position > 0 {
                position -= 1
                guard try key(position).withUnsafeBytes({ try body($0, id(position)) }) else { return }
            }
        } else {
            var position = 0
            if let cursor {
                position = firstIndex { cursor.lexicographicallyPrecedes($0) }
            } else if let start {
                position = firstIndex { !$0.lexicographicallyPrecedes(start) }
            }
            while position < count {
                guard try key(position).withUnsafeBytes({ try body($0, id(position)) }) else { return }
                position += 1
            }
        }
    }
}

/// Queries over an in-memory state at one position of a store's log, with the same
/// filters, orders and cursors as the server's `QueryChordsets` and `CountChordsets`
/// (docs/FEED.md): what a device replica answers its app from.
public struct InMemoryQueries: OrderedChordsets {
    package let state: InMemoryState
    /// The store's last event the state reflects.
    public let head: UInt64
    private let index: (ChordsetOrder) -> InMemoryIndex

    /// Queries `state`, taking each order's index from `index` (which may cache them).
    public init(state: InMemoryState, head: UInt64, index: @escaping (ChordsetOrder) -> InMemoryIndex) {
        self.state = state
        self.head = head
        self.index = index
    }

    /// One page of `query`'s result.
    public func page(_ query: ChordsetQuery) throws(ChordStoreError) -> QueryPage {
        do {
            return try QueryRunner.page(query, in: self)
        } catch {
            throw Self.wrapping(error)
        }
    }

    /// How many chordsets match `query`'s filters.
    public func count(_ query: ChordsetQuery) throws(ChordStoreError) -> Int {
        do {
            return try QueryRunner.count(query, in: self).count
        } catch {
            throw Self.wrapping(error)
        }
    }

    /// `error` itself if it is a ``ChordStoreError``, otherwise an `internal` error that
    /// keeps it as the cause (the in-memory indexes throw nothing else).
    private static func wrapping(_ error: any Error) -> ChordStoreError {
        error as? ChordStoreError ?? ChordStoreError(.internal, "\(error)", cause: error)
    }

    package func chordset(_ id: UUID) -> Chordset? { state.chordset(id) }
    package func chordsetCount() -> Int { state.chordsetCount() }
    package func scan(
        _ order: ChordsetOrder, descending: Bool, after cursor: [UInt8]?, from start: [UInt8]?,
        _ body: (UnsafeRawBufferPointer, UUID) throws -> Bool
    ) throws {
        try index(order).scan(in: state, descending: descending, after: cursor, from: start, body)
    }
}
