public import Foundation

/// The whole projected state as plain Swift values: what a replay of the log produces,
/// and the storage of the in-memory engine.
public struct InMemoryState: StateWriting, Sendable, Hashable {
    private struct Record: Sendable, Hashable {
        var title: String
        var creationDate: Instant
        var chords: StoredChords

        /// The chordset this record holds, with its id and place in the user order.
        func chordset(_ id: UUID, index: Int) -> Chordset {
            Chordset(id: id, title: title, creationDate: creationDate, index: index, chords: chords.chords(of: id))
        }
    }

    private var records: [IDKey: Record] = [:]
    private var order: [UUID] = []
    private var indexByID: [IDKey: Int] = [:]
    /// The chordset each chord belongs to, by the chord's id (its position is found among
    /// the chordset's eight chords), for chords whose id is not derived from their
    /// chordset's (``DerivedChordIDs``): those of chordsets the store made need none.
    private var chordOwners: [IDKey: IDKey] = [:]
    /// How many chords the chordsets hold, and how many of them an index by id holds
    /// (counted with or without ``indexesChords``: verify compares the views' index with it).
    private var chordTotal = 0
    private var indexedTotal = 0
    private var controls: Chord?
    /// The chordsets each delete-all removed, by its sequence number.
    private var graveyard: [UInt64: [Chordset]] = [:]
    /// Whether `chordOwners` is kept. A replay that only needs the resulting chordsets
    /// (rebuild, verify) turns it off: it is most of the cost of folding an add.
    private let indexesChords: Bool
    /// What queries derived from the chordsets' headers, renewed at each change of one
    /// (``headersChanged()``); not part of the state's value (equality, hash).
    private var memo = MemoSlot()

    /// Holds the memo out of the state's equality and hash: two states with the same
    /// chordsets are equal whatever their queries have sorted.
    private struct MemoSlot: Sendable, Hashable {
        var memo = ChordsetHeaderMemo()
        static func == (lhs: MemoSlot, rhs: MemoSlot) -> Bool { true }
        func hash(into hasher: inout Hasher) {}
    }

    /// An empty state, as before the first event.
    ///
    /// - Parameter indexingChords: keep an index of chords by id, which makes
    ///   ``chordLocation(_:)`` O(1) (needed to decide commands). Without it, the lookup
    ///   scans every chordset.
    public init(indexingChords: Bool = true) {
        indexesChords = indexingChords
    }

    /// Applies every event in order to an empty state (the first has sequence number 1).
    public init(replaying events: some Sequence<Event>) throws {
        self.init()
        for (offset, event) in events.enumerated() { try Fold.apply(event, sequence: UInt64(offset + 1), to: &self) }
    }

    /// Records what the delete-all at `sequence` removed, for a state that did not see it
    /// (one loaded from a snapshot taken after it).
    public mutating func adoptDeletedChordsets(_ chordsets: [Chordset], at sequence: UInt64) {
        graveyard[sequence] = chordsets
    }

    public func deletedChordsets(at sequence: UInt64) -> [Chordset]? { graveyard[sequence] }

    /// Every delete-all's removed chordsets, by its sequence number.
    public var allDeletedChordsets: [UInt64: [Chordset]] { graveyard }

    /// Makes room for `chordsets` chordsets and `indexedChords` chords in the chord index
    /// (those whose ids are not derived), so that a replay of a long log does not spend
    /// its time regrowing hash tables.
    public mutating func reserveCapacity(chordsets: Int, indexedChords: Int) {
        records.reserveCapacity(chordsets)
        order.reserveCapacity(chordsets)
        indexByID.reserveCapacity(chordsets)
        if indexesChords { chordOwners.reserveCapacity(indexedChords) }
    }

    /// The chordset ids in the user order.
    public var chordsetIDsInOrder: [UUID] { order }

    /// What queries derived from the chordsets' headers (ids, titles, creation dates) of
    /// this state: the same object until one of them changes, then a new empty one (see
    /// ``ChordsetHeaderMemo``).
    package var headerMemo: ChordsetHeaderMemo { memo.memo }

    /// Calls `body` with each chordset's id, title and creation date, in the user order:
    /// what an order's index needs, without making each chordset (its chords) as a value.
    /// (The user order, not the records' table's: chordsets come nearly in creation
    /// order that way, which the sort takes in close to linear time; walking the table
    /// instead made a re-sort of 100,000 chordsets slower, see docs/PERFORMANCE.md.)
    public func forEachChordsetHeader(_ body: (UUID, String, Instant) -> Void) {
        for id in order {
            guard let record = records[IDKey(id)] else { continue }
            body(id, record.title, record.creationDate)
        }
    }

    /// Every chordset, in the user order (one lookup each: the index is the position).
    public func chordsetsInOrder() -> [Chordset] {
        var all: [Chordset] = []
        all.reserveCapacity(order.count)
        forEachChordsetInOrder { all.append($0) }
        return all
    }

    /// Calls `body` with each chordset in the user order (no array of them is built).
    public func forEachChordsetInOrder<Failure: Error>(_ body: (Chordset) throws(Failure) -> Void) throws(Failure) {
        for (index, id) in order.enumerated() {
            guard let record = records[IDKey(id)] else { continue }
            try body(record.chordset(id, index: index))
        }
    }

    public func chordset(_ id: UUID) -> Chordset? {
        let key = IDKey(id)
        guard let record = records[key], let index = indexByID[key] else { return nil }
        return record.chordset(id, index: index)
    }

    public func chordLocation(_ id: UUID) -> ChordLocation? {
        if let controls, controls.id == id { return .controls }
        if indexesChords {
            let key = IDKey(id)
            if let owner = key.derivedOwner, let position = position(of: id, in: owner) { return .chordset(owner.id, position: position) }
            guard let owner = chordOwners[key], let position = position(of: id, in: owner) else { return nil }
            return .chordset(owner.id, position: position)
        }
        for (chordsetID, record) in records {
            if let position = record.chords.position(of: id, in: chordsetID.id) { return .chordset(chordsetID.id, position: position) }
        }
        return nil
    }

    /// The controls chord's id, then the index (the chordset is new: only a chord a
    /// client named can have such an id).
    public func holdsChordID(derivedFrom chordset: UUID) -> Bool {
        guard indexesChords else { return (0..<Chordset.chordCount).contains { chordLocation(DerivedChordIDs.chordID(of: chordset, position: $0)) != nil } }
        return (0..<Chordset.chordCount).contains { position in
            let id = DerivedChordIDs.chordID(of: chordset, position: position)
            return controls?.id == id || chordOwners[IDKey(id)] != nil
        }
    }

    /// The position of the chord `id` in the chordset `owner`, if it holds it.
    private func position(of id: UUID, in owner: IDKey) -> Int? {
        guard let index = records.index(forKey: owner) else { return nil }
        return records.values[index].chords.position(of: id, in: owner.id)
    }

    /// Whether the chord index keeps an entry for `chord` of the chordset `owner`: not
    /// when the chord's id is derived from the chordset's.
    private static func isIndexed(_ chord: IDKey, owner: IDKey) -> Bool { !chord.isDerived(of: owner) }

    /// How many chords an index by id holds: those whose ids are not derived from their
    /// chordset's, and the controls chord (which the views' index holds).
    package var indexedChordCount: Int { indexedTotal + (controls == nil ? 0 : 1) }

    /// How many chords the index by id holds now, counted in the index itself (with the
    /// controls chord): what verify compares with a replay's ``indexedChordCount``, so
    /// that an index drifting from the chordsets is caught. Without ``indexesChords`` there
    /// is no index, and this is the count.
    package var chordIndexSize: Int { indexesChords ? chordOwners.count + (controls == nil ? 0 : 1) : indexedChordCount }

    public func controlsChord() -> Chord? { controls }
    public func chordsetCount() -> Int { order.count }
    public func chordCount() -> Int {
        chordTotal + (controls == nil ? 0 : 1)
    }

    public func chordsetID(atIndex index: Int) -> UUID? {
        order.indices.contains(index) ? order[index] : nil
    }

    public mutating func insertChordset(_ chordset: Chordset) {
        headersChanged(adding: chordset)
        let index = min(max(chordset.index, 0), order.count)
        let chords = StoredChords(chordset.chords, of: chordset.id)
        records[IDKey(chordset.id)] = Record(title: chordset.title, creationDate: chordset.creationDate, chords: chords)
        order.insert(chordset.id, at: index)
        reindex(from: index, through: order.count - 1)
        chordTotal += chordset.chords.count
        guard !chords.areAllDerived else { return }  // none of them is indexed
        let owner = IDKey(chordset.id)
        for chord in chordset.chords {
            let key = IDKey(chord.id)
            guard Self.isIndexed(key, owner: owner) else { continue }
            indexedTotal += 1
            if indexesChords { chordOwners[key] = owner }
        }
    }

    public mutating func replaceChordset(_ chordset: Chordset) {
        guard let index = records.index(forKey: IDKey(chordset.id)) else { return }
        if records.values[index].title != chordset.title { headersChanged() }
        records.values[index].title = chordset.title
        chordTotal += chordset.chords.count - records.values[index].chords.count
        records.values[index].chords = StoredChords(chordset.chords, of: chordset.id)
    }

    public mutating func removeChordset(_ chordset: Chordset) {
        let key = IDKey(chordset.id)
        guard let position = records.index(forKey: key) else { return }
        headersChanged()  // changes nothing in `records`: `position` stays valid
        let record = records.remove(at: position).value
        guard let index = indexByID.removeValue(forKey: key) else { return }
        order.remove(at: index)
        reindex(from: index, through: order.count - 1)
        chordTotal -= record.chords.count
        for chord in record.chords.areAllDerived ? [] : record.chords.chords(of: chordset.id) where Self.isIndexed(IDKey(chord.id), owner: key) {
            indexedTotal -= 1
            if indexesChords { chordOwners[IDKey(chord.id)] = nil }
        }
    }

    public mutating func moveChordset(_ id: UUID, from: Int, to: Int) {
        // The memo is kept: no value in it depends on the user order.
        guard order.indices.contains(from), order.indices.contains(to), order[from] == id else { return }
        order.remove(at: from)
        order.insert(id, at: to)
        reindex(from: min(from, to), through: max(from, to))
    }

    public mutating func setControlsChord(_ chord: Chord?) { controls = chord }

    public mutating func retitleChordset(_ id: UUID, to title: String) -> Bool {
        // Through the index: reading the record first would copy it (its title and chords).
        guard let index = records.index(forKey: IDKey(id)) else { return false }
        headersChanged()
        records.values[index].title = title
        return true
    }

    public mutating func updateChord(_ chordID: UUID, inChordset chordsetID: UUID, _ change: (inout Chord) -> Void) -> Bool {
        // One lookup, then the chord's position (its id's, or a scan of eight chords; no
        // probe of the chord index), both through the dictionary's storage: reading the
        // record out would copy it.
        guard let index = records.index(forKey: IDKey(chordsetID)) else { return false }
        return records.values[index].chords.update(chordID, of: chordsetID, change)
    }

    public mutating func removeAllChordsets(deletedAt sequence: UInt64) -> [UUID] {
        let removed = order.compactMap(chordset)
        graveyard[sequence] = removed
        headersChanged()
        records.removeAll()
        order.removeAll()
        indexByID.removeAll()
        chordOwners.removeAll()
        chordTotal = 0
        indexedTotal = 0
        return removed.map(\.id)
    }

    public mutating func restoreChordsets(deletedAt sequence: UInt64) -> [UUID] {
        let restored = graveyard[sequence] ?? []
        for chordset in restored { insertChordset(chordset) }
        return restored.map(\.id)
    }

    /// Drops what queries derived from the headers: called before any change of an id, a
    /// title or a creation date (every path to `records`' headers goes through one of the
    /// methods that call it).
    ///
    /// A blank memo held by this state alone is kept (nothing else can fill it): a
    /// replay's adds allocate none (and look nothing up). At the add of a chordset the
    /// state lacks (`adding`, before it is put in), the new memo carries the old one's
    /// seeds for it (``ChordsetHeaderMemo/seeds(adding:)``): the orders after the add
    /// are made from them.
    private mutating func headersChanged(adding chordset: Chordset? = nil) {
        if isKnownUniquelyReferenced(&memo.memo), memo.memo.isBlank { return }  // a blank memo gives no seed
        var seeds = ChordsetHeaderMemo.Seeds()
        if let chordset {
            seeds = memo.memo.seeds(adding: .init(id: chordset.id, title: chordset.title, created: chordset.creationDate))
            if !seeds.isEmpty, records.index(forKey: IDKey(chordset.id)) != nil { seeds = .init() }  // already there
        }
        memo = MemoSlot(memo: ChordsetHeaderMemo(seeds: seeds))
    }

    private mutating func reindex(from start: Int, through end: Int) {
        guard start <= end else { return }
        for index in start...end { indexByID[IDKey(order[index])] = index }
    }
}
