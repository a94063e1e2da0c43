package import ChordStoreDomain
package import Foundation

/// What a query reads: the chordsets and their ordered indexes (creation, title, user
/// order) at one position of the store's log. A store snapshot (LMDB or memory) and a
/// device replica's view (``InMemoryQueries``) both provide it.
package protocol OrderedChordsets {
    /// The store's last event the chordsets reflect.
    var head: UInt64 { get }
    /// The chordset with `id`.
    func chordset(_ id: UUID) throws -> Chordset?
    /// How many chordsets there are.
    func chordsetCount() throws -> Int
    /// Calls `body` with `order`'s index entries (key bytes, chordset id), ascending or
    /// `descending`, from just past `cursor` (a key) or from `start` (a key prefix), until
    /// it returns `false`.
    func scan(
        _ order: ChordsetOrder, descending: Bool, after cursor: [UInt8]?, from start: [UInt8]?,
        _ body: (UnsafeRawBufferPointer, UUID) throws -> Bool) throws
}

/// Runs a ``ChordsetQuery`` over a snapshot's ordered indexes (creation, title, user
/// order): it seeks to the cursor (or to the first possible match), reads in order, and
/// stops after `limit` matches, or after `maxScanned` entries with a cursor to go on
/// from, so a page never materialises the whole store.
package enum QueryRunner {
    /// Entries one page may read before it returns what it has.
    package static let maxScanned = 100_000

    package static func page(_ query: ChordsetQuery, in snapshot: some OrderedChordsets) throws -> QueryPage {
        let sequence = snapshot.head
        guard query.limit > 0 else { return QueryPage(chordsets: [], nextCursor: query.cursor, sequence: sequence) }
        var chordsets: [Chordset] = []
        var scanned = 0
        var lastKey: [UInt8]?
        var exhausted = true
        let range = bounds(query)
        try snapshot.scan(query.order, descending: query.descending, after: query.cursor, from: range.start) { key, id in
            if let stop = range.stop, stops(key, at: stop, descending: query.descending) { return false }
            lastKey = Array(key)
            scanned += 1
            // Title order: the key holds the folded title and creation date, so only
            // matching chordsets are read.
            if query.order == .title, let (title, created) = Self.titleAndCreation(key),
               title.count < StoreKeys.maxTitleKeyPart - 3,  // a cut title is checked on its record
               !query.matches(folded: title, created: created) {
                guard scanned < maxScanned else {
                    exhausted = false
                    return false
                }
                return true
            }
            guard let chordset = try snapshot.chordset(id) else {
                throw ChordStoreError(.dataLoss, "an index names chordset \(id), which has no record")
            }
            if query.matches(chordset) { chordsets.append(chordset) }
            if chordsets.count >= query.limit || scanned >= maxScanned {
                exhausted = false
                return false
            }
            return true
        }
        return QueryPage(chordsets: chordsets, nextCursor: exhausted ? nil : lastKey, sequence: sequence)
    }

    /// How many chordsets match (all pages), and the position it was counted at.
    package static func count(_ query: ChordsetQuery, in snapshot: some OrderedChordsets) throws -> (count: Int, sequence: UInt64) {
        let sequence = snapshot.head
        guard query.isFiltered else { return (try snapshot.chordsetCount(), sequence) }
        // The title index's keys hold every filtered field: count without reading records.
        var count = 0
        var byTitle = query
        byTitle.order = .title
        byTitle.descending = false
        let range = bounds(byTitle)
        try snapshot.scan(.title, descending: false, after: nil, from: range.start) { key, id in
            if let stop = range.stop, stops(key, at: stop, descending: false) { return false }
            guard let (title, created) = titleAndCreation(key) else {
                throw ChordStoreError(.dataLoss, "a title index key is \(key.count) bytes")
            }
            if title.count >= StoreKeys.maxTitleKeyPart - 3 {
                // A cut title: the record decides.
                if let chordset = try snapshot.chordset(id), query.matches(chordset) { count += 1 }
            } else if query.matches(folded: title, created: created) {
                count += 1
            }
            return true
        }
        return (count, sequence)
    }

    /// The folded title and creation date inside a title-index key.
    private static func titleAndCreation(_ key: UnsafeRawBufferPointer) -> (UnsafeRawBufferPointer, Instant)? {
        guard key.count >= 25 else { return nil }
        let title = UnsafeRawBufferPointer(rebasing: key[..<(key.count - 25)])
        let time = UInt64(bigEndian: key.loadUnaligned(fromByteOffset: key.count - 24, as: UInt64.self)) ^ (1 << 63)
        return (title, Instant(microsecondsSince1970: Int64(bitPattern: time)))
    }

    /// Where a scan can start and when it can stop, from the filters the order's keys
    /// carry: the creation bounds in creation order, the title prefix in title order.
    private static func bounds(_ query: ChordsetQuery) -> (start: [UInt8]?, stop: Stop?) {
        let zero = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        switch query.order {
        case .creationDate:
            let low = query.createdFrom.map { StoreKeys.creation($0, zero) }
            let high = query.createdBefore.map { StoreKeys.creation($0, zero) }
            return query.descending ? (high, low.map(Stop.below)) : (low, high.map(Stop.atOrAbove))
        case .title:
            guard let prefix = query.titlePrefix.map(StoreKeys.titlePart), !prefix.isEmpty else { return (nil, nil) }
            return query.descending
                ? (prefix + [0xFF], .withoutPrefix(prefix))
                : (prefix, .withoutPrefix(prefix))
        case .index:
            return (nil, nil)
        }
    }

    private enum Stop {
        case atOrAbove([UInt8])
        case below([UInt8])
        case withoutPrefix([UInt8])
    }

    private static func stops(_ key: UnsafeRawBufferPointer, at stop: Stop, descending: Bool) -> Bool {
        switch stop {
        case .atOrAbove(let bound): !key.lexicographicallyPrecedes(bound)
        case .below(let bound): key.lexicographicallyPrecedes(bound)
        case .withoutPrefix(let prefix): !key.starts(with: prefix)
        }
    }
}
