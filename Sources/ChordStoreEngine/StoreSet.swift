import ChordStoreRecords
import ChordStoreDomain
import Foundation

/// Every store as plain Swift values: the in-memory backend's storage, and what a replay
/// of the log produces (for rebuild, verify and reads of the past).
struct StoreSet: StoreSpace, Sendable {
    private(set) var stores: [UInt32: Store]
    /// The stores' estimated bytes in memory, summed (``Store/estimatedBytes``: one copy),
    /// kept as they change, for the memory bound.
    private(set) var estimatedBytes = 0
    /// How many stores are in memory (not evicted), kept as they change.
    private(set) var residentCount = 1
    /// Which replacement of the live state this set is (``replacing(_:)``): a store a
    /// reader folded from an earlier one is not put back (the log may have been cut and
    /// written again since, to the same heads).
    private(set) var generation: UInt64 = 0
    private(set) var names: [String: UInt32] = [StoreName.default: 0]
    private(set) var lastID: UInt32 = 0
    /// The live tokens, by id.
    private(set) var tokens: [String: TokenRecord] = [:]
    var logHead = LogHead.empty
    /// The whole log (kept by the in-memory backend; a replay keeps none).
    private(set) var records: [[UInt8]] = []
    let keepsRecords: Bool
    /// Whether states index chords by id (a replay for verify and rebuild skips it).
    private let indexingChords: Bool

    /// How much room a store's tables are given when it is made (a replay's estimate, from
    /// the views, of what the log will put in them).
    struct Capacity: Sendable, Equatable {
        /// The store's chordsets.
        var chordsets: Int
        /// The chords its chord index holds (ids not derived from their chordset's).
        var indexedChords: Int
        /// The store's events.
        var events: Int
    }
    /// The room to make in each store as it is made, by store id.
    private let capacities: [UInt32: Capacity]
    /// Whether that room is made in the changes too (not when a replay folds them apart
    /// and adopts them: ``adoptChanges(_:)``).
    private let reservingChanges: Bool

    init(keepsRecords: Bool, indexingChords: Bool = true, capacities: [UInt32: Capacity] = [:], reservingChanges: Bool = true) {
        self.keepsRecords = keepsRecords
        self.indexingChords = indexingChords
        self.capacities = capacities
        self.reservingChanges = reservingChanges
        stores = [:]
        stores[0] = makeStore(.initialDefault)
        estimatedBytes = stores[0]?.estimatedBytes ?? 0
    }

    /// A set as ``LiveStateFile`` saved it: its stores (each by its record's id), the
    /// largest store id ever given (deleted stores' included), the tokens and the log's
    /// head. Records are not kept, and chords are indexed (the live state's settings).
    init(saved stores: [UInt32: Store], lastID: UInt32, tokens: [String: TokenRecord], logHead: LogHead) {
        keepsRecords = false
        indexingChords = true
        capacities = [:]
        reservingChanges = true
        self.stores = stores
        names = Dictionary(uniqueKeysWithValues: stores.values.map { ($0.record.name, $0.record.id) })
        self.lastID = lastID
        self.tokens = tokens
        self.logHead = logHead
        estimatedBytes = stores.values.reduce(0) { $0 + $1.estimatedBytes }
        residentCount = stores.values.lazy.filter { $0.evicted == nil }.count
    }

    private func makeStore(_ record: StoreRecord) -> Store {
        var store = Store(record: record, state: InMemoryState(indexingChords: indexingChords), log: InMemoryLog(keepsRecords: keepsRecords))
        if reservingChanges { store.changes = Self.newChanges(reserving: capacities[record.id]) }
        if let capacity = capacities[record.id] {
            store.state.reserveCapacity(chordsets: capacity.chordsets, indexedChords: capacity.indexedChords)
            store.log.reserveCapacity(events: capacity.events)
        }
        return store
    }

    /// A store's empty changes, with room for `capacity`'s chordsets.
    static func newChanges(reserving capacity: Capacity?) -> InMemoryChanges {
        var changes = InMemoryChanges()
        if let capacity { changes.reserveCapacity(chordsets: capacity.chordsets) }
        return changes
    }

    func store(named name: String) -> StoreRecord? { names[name].flatMap { stores[$0]?.record } }
    func store(id: UInt32) -> StoreRecord? { stores.index(forKey: id).map { stores.values[$0].record } }
    func storeCount() -> Int { stores.count }
    func lastStoreID() -> UInt32 { lastID }

    /// The live stores, `default` first, then by name.
    var liveStores: [Store] {
        stores.values.sorted { a, b in
            if (a.record.id == 0) != (b.record.id == 0) { return a.record.id == 0 }
            return a.record.name < b.record.name
        }
    }

    subscript(id: UInt32) -> Store? { stores[id] }

    mutating func appendRecord(_ logSequence: UInt64, _ bytes: [UInt8]) {
        if keepsRecords { records.append(bytes) }
    }

    mutating func withStore<T>(
        _ store: StoreRecord, _ body: (inout InMemoryState, inout InMemoryChanges, inout InMemoryLog) throws -> T
    ) throws -> T {
        // Borrowed in place through the dictionary's storage, the three apart, without a
        // copy and without taking the store out and putting it back (a replay does this
        // for every event).
        guard let index = stores.index(forKey: store.id) else {
            throw ChordStoreError(.internal, "store \(store.name) is not live")
        }
        return try Self.borrow(&stores.values[index], &estimatedBytes, body)
    }

    /// Runs `body` on `store`'s tables in place, and adds to `total` how much that
    /// changed the store's estimated bytes.
    private static func borrow<T>(
        _ store: inout Store, _ total: inout Int, _ body: (inout InMemoryState, inout InMemoryChanges, inout InMemoryLog) throws -> T
    ) throws -> T {
        guard store.evicted == nil else {
            throw ChordStoreError(.internal, "store \(store.record.name) is evicted from memory: it must be loaded before it changes")
        }
        return try store.withTables { state, changes, log in
            let before = Store.estimatedBytes(state, log)
            defer { total += Store.estimatedBytes(state, log) - before }
            return try body(&state, &changes, &log)
        }
    }

    mutating func save(_ store: StoreRecord) {
        if let index = stores.index(forKey: store.id) {
            stores.values[index].record = store
        } else {
            let made = makeStore(store)
            estimatedBytes += made.estimatedBytes
            residentCount += 1
            stores[store.id] = made
            names[store.name] = store.id
            lastID = max(lastID, store.id)
        }
    }

    /// The changes a replay folded apart (``LogReplay``) become the live stores': one for
    /// each live store, and none for another.
    mutating func adoptChanges(_ changes: [UInt32: InMemoryChanges]) {
        precondition(changes.count == stores.count, "a replay folded changes for \(changes.count) stores; \(stores.count) are live")
        for (id, storeChanges) in changes {
            guard let index = stores.index(forKey: id) else { preconditionFailure("a replay folded changes for store id \(id), which is not live") }
            stores.values[index].changes = storeChanges
        }
    }

    /// Each store's changes, taken out (the stores keep empty ones), for a replay that
    /// goes on from this set to fold further and give back (``adoptChanges(_:)``); `nil`
    /// for a set that has seen no event (a fresh replay makes its own).
    mutating func takeChanges() -> [UInt32: InMemoryChanges]? {
        guard logHead.sequence > 0 else { return nil }
        var taken: [UInt32: InMemoryChanges] = [:]
        for index in stores.indices {
            taken[stores.keys[index]] = stores.values[index].changes
            stores.values[index].changes = InMemoryChanges()
        }
        return taken
    }

    /// Evicts the stores with `ids` from memory: their state and changes are dropped,
    /// their registry record, log index and command ids stay (a repeated command id is
    /// still recognised), and they are folded again from the log when next used. Ids
    /// not live or evicted already are passed over.
    mutating func evict(_ ids: [UInt32]) {
        for id in ids {
            guard let index = stores.index(forKey: id), stores.values[index].evicted == nil else { continue }
            let before = stores.values[index].estimatedBytes
            residentCount -= 1
            stores.values[index].evict()
            estimatedBytes += stores.values[index].estimatedBytes - before
        }
    }

    /// Puts `store`, folded from the log (``Store/resident(records:)``), in place of its
    /// evicted self, if it is still evicted at the same event; returns whether it did.
    @discardableResult
    mutating func install(_ store: Store) -> Bool {
        guard store.evicted == nil, let index = stores.index(forKey: store.record.id),
            stores.values[index].evicted != nil, stores.values[index].record.head == store.record.head
        else { return false }
        estimatedBytes += store.estimatedBytes - stores.values[index].estimatedBytes
        residentCount += 1
        stores.values[index] = store
        return true
    }

    /// This set as the replacement of `previous` (a rebuild, a cut of the log): one
    /// generation later.
    func replacing(_ previous: StoreSet) -> StoreSet {
        var set = self
        set.generation = previous.generation &+ 1
        return set
    }

    mutating func remove(_ store: StoreRecord) {
        if let removed = stores.removeValue(forKey: store.id) {
            estimatedBytes -= removed.estimatedBytes
            if removed.evicted == nil { residentCount -= 1 }
        }
        names[store.name] = nil
    }

    func token(id: String) -> TokenRecord? { tokens[id] }
    func tokenCount() -> Int { tokens.count }
    mutating func saveToken(_ token: TokenRecord) { tokens[token.grant.id] = token }
    mutating func removeToken(id: String) { tokens[id] = nil }
    mutating func removeTokens(ofStore storeID: UInt32) {
        tokens = tokens.filter { !$0.value.grant.role.isScoped || $0.value.grant.storeID != storeID }
    }

    /// Applies records read from a log, without checks (a replay of records checked as
    /// they were read, or of this set's own log).
    static func replaying(_ records: [[UInt8]], keepsRecords: Bool) throws -> StoreSet {
        var set = StoreSet(keepsRecords: keepsRecords)
        try set.replay(records[...])
        return set
    }

    /// Applies records that follow this set's log head, decoding each.
    mutating func replay(_ records: ArraySlice<[UInt8]>) throws {
        for record in records {
            let recorded = try record.withUnsafeBytes { try RecordCodec.decode($0, sequence: logHead.sequence + 1) }
            try replay(recorded, record: record)
        }
    }

    /// The replay of what this set took since its log held `count` records: those
    /// records, then its head as it is now (an import keeps there the latest time the log
    /// has seen, which its older events do not carry).
    func replayOfRecords(after count: Int) -> @Sendable (inout StoreSet) throws -> Void {
        Self.replay(of: Array(records[count...]), head: logHead)
    }

    /// The replay of `records` (what a change appended to the log), then of `head` (what
    /// the change left as the log's head).
    static func replay(of records: [[UInt8]], head: LogHead) -> @Sendable (inout StoreSet) throws -> Void {
        { set in
            try set.replay(records[...])
            set.logHead = head
        }
    }

    /// The replay of a commit's `results` on a set whose head was `start`: the events the
    /// batch appended, in order (a repeated command id is answered with its original
    /// event, appended earlier, maybe earlier in the batch, not again), then `head`.
    static func replayOfCommit(
        _ results: [Result<CommittedEvent, ChordStoreError>], after start: LogHead, head: LogHead
    ) -> @Sendable (inout StoreSet) throws -> Void {
        var next = start.sequence + 1
        var committed: [CommittedEvent] = []
        for case .success(let event) in results where event.recorded.logSequence == next {
            committed.append(event)
            next += 1
        }
        return { [committed] set in
            for event in committed { try set.replay(event.recorded, record: event.record) }
            set.logHead = head
        }
    }

    /// Applies one record that follows this set's log head, decoded as `recorded`.
    mutating func replay(_ recorded: RecordedEvent, record: [UInt8]) throws {
        appendRecord(recorded.logSequence, record)
        try StoreFold.apply(ReplayFields(recorded), record: record, to: &self)
        logHead = LogHead(sequence: recorded.logSequence, checksum: recorded.checksum, timestamp: recorded.timestamp, epoch: recorded.epoch)
    }
}

/// A store's log in memory: its records (if kept), where each is in the whole log, and
/// the command ids applied (id → the store's sequence).
struct InMemoryLog: LogAppending, Sendable {
    private(set) var records: [[UInt8]] = []
    /// The log position of each event of the store (index: sequence − 1).
    private(set) var logSequences: [UInt64] = []
    private(set) var commands: [String: UInt64] = [:]
    let keepsRecords: Bool

    init(keepsRecords: Bool = true) { self.keepsRecords = keepsRecords }

    /// A log as ``LiveStateFile`` saved it, without records.
    init(logSequences: [UInt64], commands: [String: UInt64]) {
        keepsRecords = false
        self.logSequences = logSequences
        self.commands = commands
    }

    /// Makes room for the log positions of `events` events.
    mutating func reserveCapacity(events: Int) { logSequences.reserveCapacity(events) }

    func sequence(forCommand commandID: String) -> UInt64? { commands[commandID] }
    var commandCount: Int { commands.count }

    func change(at sequence: UInt64) throws -> Change? {
        guard sequence >= 1, sequence <= UInt64(records.count) else { return nil }
        return try records[Int(sequence - 1)].withUnsafeBytes { try RecordCodec.decode($0, sequence: logSequences[Int(sequence - 1)]) }.change
    }

    func event(forCommand commandID: String) throws -> RecordedEvent? {
        guard let sequence = commands[commandID], sequence <= UInt64(records.count) else { return nil }
        return try records[Int(sequence - 1)].withUnsafeBytes { try RecordCodec.decode($0, sequence: logSequences[Int(sequence - 1)]) }
    }

    mutating func append(_ sequence: UInt64, logSequence: UInt64, _ record: [UInt8], commandID: String) {
        if keepsRecords { records.append(record) }
        logSequences.append(logSequence)
        if !commandID.isEmpty { commands[commandID] = sequence }
    }
}
