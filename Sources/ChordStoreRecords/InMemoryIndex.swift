public import ChordStoreDomain
package import Foundation

/// One order's index over an in-memory state: the keys the LMDB indexes use (so cursors
/// and title folding mean the same), sorted once. Build it after the state changes and
/// reuse it for every query until the next change.
public struct InMemoryIndex: Sendable {
    /// The order this index sorts by.
    public let order: ChordsetOrder
    private let entries: [(key: [UInt8], id: UUID)]

    /// Sorts `state`'s chordsets by `order`'s keys. Reads only each chordset's id, title
    /// and creation date (not its chords); the creation order sorts fixed-size integers
    /// that compare as its keys do, and makes the keys after.
    public init(_ state: InMemoryState, order: ChordsetOrder) {
        self.order = order
        var keyed: [(key: [UInt8], id: UUID)] = []
        keyed.reserveCapacity(state.chordsetCount())
        switch order {
        case .index:
            for (index, id) in state.chordsetIDsInOrder.enumerated() { keyed.append((StoreKeys.index(index), id)) }
        case .title:
            state.forEachChordsetHeader { id, title, created in keyed.append((StoreKeys.title(title, created, id), id)) }
            keyed.sort { $0.key.lexicographicallyPrecedes($1.key) }
        case .creationDate:
            var sortable: [(time: Int64, high: UInt64, low: UInt64, created: Instant, id: UUID)] = []
            sortable.reserveCapacity(state.chordsetCount())
            state.forEachChordsetHeader { id, _, created in
                let (high, low) = StoreKeys.sortKey(id)
                sortable.append((created.microsecondsSince1970, high, low, created, id))
            }
            sortable.sort { ($0.time, $0.high, $0.low) < ($1.time, $1.high, $1.low) }
            for entry in sortable { keyed.append((StoreKeys.creation(entry.created, entry.id), entry.id)) }
        }
        entries = keyed
    }

    /// See ``OrderedChordsets/scan(_:descending:after:from:_:)``: binary searches to the
    /// cursor or the start key, then walks the sorted keys.
    package func scan(
        descending: Bool, after cursor: [UInt8]?, from start: [UInt8]?,
        _ body: (UnsafeRawBufferPointer, UUID) throws -> Bool
    ) throws {
        var cursor = cursor
        if let resume = cursor, let start,
           descending ? start.lexicographicallyPrecedes(resume) : resume.lexicographicallyPrecedes(start) {
            cursor = nil  // the start key lies beyond the cursor
        }
        let start = start.flatMap { $0.isEmpty ? nil : $0 }
        if descending {
            // The entries below the cursor (or the start), last first.
            var position = entries.count
            if let bound = cursor ?? start { position = firstIndex { !$0.lexicographicallyPrecedes(bound) } }
            while position > 0 {
                position -= 1
                guard try entries[position].key.withUnsafeBytes({ try body($0, entries[position].id) }) else { return }
            }
        } else {
            var position = 0
            if let cursor {
                position = firstIndex { cursor.lexicographicallyPrecedes($0) }
            } else if let start {
                position = firstIndex { !$0.lexicographicallyPrecedes(start) }
            }
            while position < entries.count {
                guard try entries[position].key.withUnsafeBytes({ try body($0, entries[position].id) }) else { return }
                position += 1
            }
        }
    }

    /// The first position whose key satisfies `isAtOrAfter` (monotone over the sorted keys).
    private func firstIndex(_ isAtOrAfter: ([UInt8]) -> Bool) -> Int {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if isAtOrAfter(entries[middle].key) { high = middle } else { low = middle + 1 }
        }
        return low
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
        try index(order).scan(descending: descending, after: cursor, from: start, body)
    }
}
