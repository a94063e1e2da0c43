import ChordStoreDomain
import ChordStoreRecords
import Foundation

extension StoreSet.Store {
    /// Estimated bytes of memory the store's state, changes and log index take in one copy
    /// of the live state: a floor for its tables, then per chordset, per chord the
    /// chord index holds, per event and per command id. Measured on this build's state
    /// (docs/PERFORMANCE.md, "The memory bound"); an evicted store keeps its log index
    /// and command ids alone.
    var estimatedBytes: Int {
        guard evicted == nil else { return Self.keptBytes(log) }
        return Self.estimatedBytes(state, log)
    }

    /// ``estimatedBytes`` of a store in memory with these tables. The writer asks it
    /// before and after each event it folds, with the tables it changes in place: asked
    /// of a ``StoreSet/Store``'s `state`, the state was copied out of its tables (a
    /// retain and a release of each of its collections) twice per event.
    static func estimatedBytes(_ state: borrowing InMemoryState, _ log: borrowing InMemoryLog) -> Int {
        8_192 + keptBytes(log) + state.chordsetCount() * 700 + state.chordIndexSize * 64 + log.logSequences.count * 24
    }

    /// Of ``estimatedBytes``, what the store keeps in memory while evicted: its log index
    /// and command ids.
    var keptBytes: Int { Self.keptBytes(log) }

    private static func keptBytes(_ log: borrowing InMemoryLog) -> Int { 256 + log.logSequences.count * 8 + log.commandCount * 96 }

    /// Drops the state and changes (``evicted``), keeping their counts, the registry
    /// record, the log index and the command ids. Nothing if evicted already.
    mutating func evict() {
        guard evicted == nil else { return }
        evicted = StoreCounts(chordsets: state.chordsetCount(), chords: state.chordCount())
        state = InMemoryState(indexingChords: true)
        changes = InMemoryChanges()
    }

    /// The store with its state and changes in memory: itself if it is, else folded again
    /// from its events, read from `records` (the log) at the positions its log index
    /// gives (``InMemoryLog/logSequences``): the same fold as a replay's, so the same
    /// state. A record missing from the log, or one that is not that event, is `dataLoss`.
    func resident(records: some RecordLookup) throws -> StoreSet.Store {
        guard let counts = evicted else { return self }
        var state = InMemoryState(indexingChords: true)
        state.reserveCapacity(chordsets: counts.chordsets, indexedChords: 0)
        var changes = InMemoryChanges()
        changes.reserveCapacity(chordsets: counts.chordsets)
        for sequence in stride(from: UInt64(1), through: record.head, by: 1) {
            guard let recorded = try log.event(at: sequence, of: record.id, records: records) else {
                throw ChordStoreError(.dataLoss, "store \(record.name) has \(log.logSequences.count) events; its head says \(record.head)")
            }
            let touched = try Fold.apply(recorded.event, sequence: sequence, to: &state)
            try ChangeFold.apply(recorded.change, chordsets: touched, to: &changes)
        }
        var store = self
        store.state = state
        store.changes = changes
        store.evicted = nil
        return store
    }
}

extension StoreSet {
    /// The replay of a change on the other copy: the stores it loaded put in first, then `replay`.
    static func replay(
        loading loaded: [StoreSet.Store], then replay: @escaping @Sendable (inout StoreSet) throws -> Void
    ) -> @Sendable (inout StoreSet) throws -> Void {
        guard !loaded.isEmpty else { return replay }
        return { set in
            for store in loaded { set.install(store) }
            try replay(&set)
        }
    }

    /// This set with every evicted store folded again from `records` (what a load of the
    /// views, or a replay going on from a saved state, needs: every store in memory).
    func residentWhole(records: some RecordLookup) throws -> StoreSet {
        var set = self
        for index in stores.indices where stores.values[index].evicted != nil {
            set.install(try stores.values[index].resident(records: records))
        }
        return set
    }

    /// Whether the store with `id` is live and evicted (read in place, without a copy).
    func isEvicted(_ id: UInt32) -> Bool {
        guard let index = stores.index(forKey: id) else { return false }
        return stores.values[index].evicted != nil
    }

    /// Each store's last event's log position (0 for none), by id: how recently it was
    /// written, where no use is known (a replay).
    func lastEvents() -> [UInt32: UInt64] {
        var last: [UInt32: UInt64] = [:]
        last.reserveCapacity(stores.count)
        for index in stores.indices { last[stores.keys[index]] = stores.values[index].record.headLogSequence }
        return last
    }

    /// How many stores are evicted.
    var evictedCount: Int { stores.values.lazy.filter { $0.evicted != nil }.count }

    /// Each store as the memory bound's plan sees it (read in place: a copy of each store
    /// would retain and release every table it holds).
    func residency() -> [ResidencyPlan.Entry] {
        var entries: [ResidencyPlan.Entry] = []
        entries.reserveCapacity(stores.count)
        for index in stores.indices {
            entries.append(ResidencyPlan.Entry(
                id: stores.keys[index], resident: stores.values[index].evicted == nil, bytes: stores.values[index].estimatedBytes,
                keptBytes: stores.values[index].keptBytes))
        }
        return entries
    }
}
