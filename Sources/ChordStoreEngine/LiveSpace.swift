import ChordStoreRecords
import ChordStoreDomain

/// One turn of the LMDB backend's writer over its live state: the stores in memory
/// (``StoreSet``, without records) and the log's write transaction, which takes the
/// batch's records and answers reads of earlier ones (a repeated command id, an undo).
/// The set is moved in and out (``with(_:records:residency:append:_:)``), never copied:
/// a copy would make the first change of each collection copy it whole.
///
/// A store evicted from memory (``StoreSet/evict(_:)``) is folded again from the log's
/// records when the turn first changes it; the stores so loaded are kept in ``loaded``,
/// for the change's replay on the other copy (``LeftRight``) to put in first
/// (``StoreSet/replay(loading:then:)``).
struct LiveSpace<Records: RecordLookup>: StoreSpace {
    var set: StoreSet
    let records: Records
    /// Where uses of stores are noted, and loads left by readers and commands' callers
    /// (`nil`: not tracked).
    let residency: StateResidency?
    /// Appends a record to the log's transaction (`nil`: the log holds them already,
    /// as a follower's batch, logged before it is applied).
    let append: ((UInt64, [UInt8]) throws -> Void)?
    /// The evicted stores this turn loaded, as they were before it changed them.
    private(set) var loaded: [StoreSet.Store] = []

    /// Runs `body` on `set` moved into a space, then moves it back (also when `body`
    /// throws). Returns `body`'s result and the evicted stores it loaded (``loaded``).
    static func with<T>(
        _ set: inout StoreSet, records: Records, residency: StateResidency? = nil, append: ((UInt64, [UInt8]) throws -> Void)?,
        _ body: (inout LiveSpace) throws -> T
    ) rethrows -> (result: T, loaded: [StoreSet.Store]) {
        var space = LiveSpace(set: StoreSet(keepsRecords: false), records: records, residency: residency, append: append)
        swap(&space.set, &set)
        defer { swap(&space.set, &set) }
        let result = try body(&space)
        return (result, space.loaded)
    }

    var logHead: LogHead {
        get { set.logHead }
        set { set.logHead = newValue }
    }

    func store(named name: String) -> StoreRecord? { set.store(named: name) }
    func store(id: UInt32) -> StoreRecord? { set.store(id: id) }
    func storeCount() -> Int { set.storeCount() }
    func lastStoreID() -> UInt32 { set.lastStoreID() }

    mutating func appendRecord(_ logSequence: UInt64, _ bytes: [UInt8]) throws {
        try append?(logSequence, bytes)
    }

    mutating func withStore<T>(
        _ store: StoreRecord, _ body: (inout InMemoryState, inout InMemoryChanges, inout LiveLog<Records>) throws -> T
    ) throws -> T {
        let records = self.records
        residency?.used(store.id)
        if set.isEvicted(store.id), let stored = set[store.id] {
            // Folded already by the command's caller (``LMDBBackend/prepareWrite(store:)``), or by a reader.
            let resident = if let left = residency?.takeLoaded(id: store.id), left.generation == set.generation,
                left.store.record.head == stored.record.head { left.store } else { try stored.resident(records: records) }
            set.install(resident)
            loaded.append(resident)
        }
        return try set.withStore(store) { state, changes, log in
            var live = LiveLog(log: InMemoryLog(keepsRecords: false), store: store.id, records: records)
            swap(&live.log, &log)
            defer { swap(&live.log, &log) }
            return try body(&state, &changes, &live)
        }
    }

    mutating func save(_ store: StoreRecord) { set.save(store) }
    mutating func remove(_ store: StoreRecord) { set.remove(store) }
    func token(id: String) -> TokenRecord? { set.token(id: id) }
    func tokenCount() -> Int { set.tokenCount() }
    mutating func saveToken(_ token: TokenRecord) { set.saveToken(token) }
    mutating func removeToken(id: String) { set.removeToken(id: id) }
    mutating func removeTokens(ofStore storeID: UInt32) { set.removeTokens(ofStore: storeID) }
}
