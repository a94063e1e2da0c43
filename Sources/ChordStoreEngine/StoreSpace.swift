import ChordStoreRecords
import ChordStoreDomain
import Foundation

/// Every store of a backend during one commit (or a replay): the registry of stores, each
/// store's state, changes and log, and the whole log's head. Both backends implement it
/// (``StoreSet`` in memory, ``LMDBStoreSpace`` over LMDB), so that the commit logic
/// (``BatchApplier``), the follower's (``ReplicaApplier``) and the replay all route events
/// through one ``StoreFold``.
protocol StoreSpace {
    associatedtype State: StateWriting
    associatedtype Changes: ChangeWriting
    associatedtype Log: LogAppending
    /// The log's last record.
    var logHead: LogHead { get set }
    /// The live store named `name` (`default` always is).
    func store(named name: String) throws -> StoreRecord?
    /// The live store with `id`.
    func store(id: UInt32) throws -> StoreRecord?
    /// How many stores are live, `default` included.
    func storeCount() throws -> Int
    /// The largest id any store was ever given (0 before the first creation).
    func lastStoreID() throws -> UInt32
    /// Appends a record to the whole log (a backend catching its views up skips it).
    mutating func appendRecord(_ logSequence: UInt64, _ bytes: [UInt8]) throws
    /// Runs `body` on the state, changes and log of `store`.
    mutating func withStore<T>(_ store: StoreRecord, _ body: (inout State, inout Changes, inout Log) throws -> T) throws -> T
    /// Records `store` in the registry (new, or its head advanced).
    mutating func save(_ store: StoreRecord) throws
    /// Deletes `store`'s views and registry entry; its name becomes free.
    mutating func remove(_ store: StoreRecord) throws
    /// The live token with `id`.
    func token(id: String) throws -> TokenRecord?
    /// How many tokens are live.
    func tokenCount() throws -> Int
    /// Records a new token.
    mutating func saveToken(_ token: TokenRecord) throws
    /// Removes the token with `id`.
    mutating func removeToken(id: String) throws
    /// Removes every token scoped to the store with `storeID`.
    mutating func removeTokens(ofStore storeID: UInt32) throws
}

/// How one recorded event changes a ``StoreSpace``: a store event changes the registry,
/// any other event is folded into its store (which must exist and be at the event's
/// sequence minus one). A thrown error is `dataLoss` (an event no valid log holds) or a
/// storage failure.
enum StoreFold {
    /// Applies `event`; returns the chordsets a store's event touched (as ``Fold``
    /// reports them), `nil` for an event of the stores or the tokens. With
    /// `foldingChanges` false, the store's changes (``ChangeFold``: undo stacks,
    /// revisions, histories) are left to the caller: a replay folds them on a thread of
    /// their own (``LogReplay``).
    @discardableResult
    static func apply(_ event: ReplayFields, record: [UInt8], to space: inout some StoreSpace, foldingChanges: Bool = true) throws -> TouchedChordsets? {
        try withUnsafePointer(to: event) { try apply(fieldsAt: $0, record: record, to: &space, foldingChanges: foldingChanges) }
    }

    /// ``apply(_:record:to:foldingChanges:)`` of the fields at `fields`, read in place: the
    /// closure that folds them into their store captures the pointer, where capturing the
    /// fields would copy them (a retain of each string and of the event's payload) for
    /// every event folded. A replay passes its chunk's elements so. `fields` must stay
    /// valid for the call, and must not point into `space`.
    @discardableResult
    static func apply(
        fieldsAt fields: UnsafePointer<ReplayFields>, record: [UInt8], to space: inout some StoreSpace, foldingChanges: Bool = true
    ) throws -> TouchedChordsets? {
        if fields.pointee.event.isServerEvent, fields.pointee.store != 0 || fields.pointee.sequence != fields.pointee.logSequence {
            throw ChordStoreError(.dataLoss, "event \(fields.pointee.logSequence) changes the stores but says it belongs to store id \(fields.pointee.store)")
        }
        switch fields.pointee.event {
        case .store(.created(let id, let name)):
            guard try space.store(named: name) == nil else {
                throw ChordStoreError(.dataLoss, "event \(fields.pointee.logSequence) creates store \(name), which exists")
            }
            let last = try space.lastStoreID()
            guard id > last, id <= StoreRecord.maxID else {
                throw ChordStoreError(.dataLoss, "event \(fields.pointee.logSequence) creates store \(name) with id \(id); the last id given was \(last)")
            }
            try space.save(StoreRecord(id: id, name: name, created: fields.pointee.timestamp, createdAt: fields.pointee.logSequence))
        case .store(.deleted(let id, let name)):
            guard id != 0, let store = try space.store(named: name), store.id == id else {
                throw ChordStoreError(.dataLoss, "event \(fields.pointee.logSequence) deletes store \(name) (id \(id)), which is not live")
            }
            try space.remove(store)
            try space.removeTokens(ofStore: id)
        case .token(.created(let grant)):
            guard try space.token(id: grant.id) == nil else {
                throw ChordStoreError(.dataLoss, "event \(fields.pointee.logSequence) creates token \(grant.id), which exists")
            }
            if grant.role.isScoped {
                guard let store = try space.store(id: grant.storeID), store.name == grant.storeName else {
                    throw ChordStoreError(
                        .dataLoss, "event \(fields.pointee.logSequence) scopes token \(grant.id) to store \(grant.storeName) (id \(grant.storeID)), which is not live")
                }
            }
            try space.saveToken(TokenRecord(grant: grant, created: fields.pointee.timestamp, createdAt: fields.pointee.logSequence, createdBy: fields.pointee.tokenID))
        case .token(.revoked(let id)):
            guard try space.token(id: id) != nil else {
                throw ChordStoreError(.dataLoss, "event \(fields.pointee.logSequence) revokes token \(id), which is not live")
            }
            try space.removeToken(id: id)
        default:
            guard var store = try space.store(id: fields.pointee.store) else {
                throw ChordStoreError(.dataLoss, "event \(fields.pointee.logSequence) belongs to store id \(fields.pointee.store), which is not live")
            }
            guard fields.pointee.sequence == store.head &+ 1 else {
                throw ChordStoreError(
                    .dataLoss, "event \(fields.pointee.logSequence) says it is event \(fields.pointee.sequence) of store \(store.name), whose last is \(store.head)")
            }
            let touched = try space.withStore(store) { state, changes, log in
                try log.append(fields.pointee.sequence, logSequence: fields.pointee.logSequence, record, commandID: fields.pointee.commandID)
                let touched = try Fold.applyReporting(fields.pointee.event, sequence: fields.pointee.sequence, to: &state)
                if foldingChanges { try ChangeFold.apply(fields.pointee.change, touched: touched, to: &changes) }
                return touched
            }
            store.advance(to: fields.pointee.sequence, at: fields.pointee.timestamp, logSequence: fields.pointee.logSequence)
            try space.save(store)
            return touched
        }
        return nil
    }
}

extension ReplayFields {
    /// What ``ChangeFold`` takes of a store's event.
    var change: Change { Change(sequence: sequence, session: session, event: event, mark: mark) }

    /// The fields of an event decided by this node.
    init(_ recorded: RecordedEvent) {
        self.init(
            event: recorded.event, session: recorded.session, commandID: recorded.commandID, mark: recorded.mark,
            store: recorded.store, sequence: recorded.sequence, logSequence: recorded.logSequence, timestamp: recorded.timestamp,
            tokenID: recorded.tokenID)
    }
}
