import ChordStoreDomain

extension StoreSet {
    /// One store's projections and log.
    struct Store: Sendable {
        /// The store's registry entry: its id, name and head.
        var record: StoreRecord
        /// Set while the store is evicted from memory (``StoreSet/evict(_:)``): `state`
        /// and `changes` are then empty, to be folded again from the log's records
        /// (``resident(records:)``); the counts answer a list of stores meanwhile.
        var evicted: StoreCounts?
        /// The state, changes and log, behind one reference: reading a store's record
        /// out of the set's table copies the store, and this way that copy retains one
        /// reference, not each of the tables'.
        private var tables: Tables

        /// A store of `record` with these tables; `evicted` if they are empty, to be folded again.
        init(record: StoreRecord, state: InMemoryState, changes: InMemoryChanges = InMemoryChanges(), log: InMemoryLog, evicted: StoreCounts? = nil) {
            self.record = record
            self.evicted = evicted
            tables = Tables(state: state, changes: changes, log: log)
        }

        /// The store's chordsets and chords.
        var state: InMemoryState {
            _read { yield tables.state }
            _modify { makeUnique(); yield &tables.state }
        }
        /// The store's undo stacks, revisions and histories.
        var changes: InMemoryChanges {
            _read { yield tables.changes }
            _modify { makeUnique(); yield &tables.changes }
        }
        /// Where each of the store's events is in the log, and its command ids.
        var log: InMemoryLog {
            _read { yield tables.log }
            _modify { makeUnique(); yield &tables.log }
        }

        /// Runs `body` on the state, changes and log, changed in place.
        mutating func withTables<T>(_ body: (inout InMemoryState, inout InMemoryChanges, inout InMemoryLog) throws -> T) rethrows -> T {
            makeUnique()
            let tables = tables
            return try body(&tables.state, &tables.changes, &tables.log)
        }

        private mutating func makeUnique() {
            if !isKnownUniquelyReferenced(&tables) { tables = Tables(state: tables.state, changes: tables.changes, log: tables.log) }
        }

        /// A store's tables, copied on write: changed only through a ``Store`` that holds
        /// the one reference to it (`makeUnique`), which is what makes it `Sendable`.
        private final class Tables: @unchecked Sendable {
            var state: InMemoryState
            var changes: InMemoryChanges
            var log: InMemoryLog

            init(state: InMemoryState, changes: InMemoryChanges, log: InMemoryLog) {
                (self.state, self.changes, self.log) = (state, changes, log)
            }
        }
    }
}
