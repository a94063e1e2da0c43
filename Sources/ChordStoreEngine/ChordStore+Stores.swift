public import ChordStoreDomain

/// The stores of a server: isolated collections of chordsets on one log (see
/// ``ChordStoreDomain/StoreName``). Every read and command names its store (`default`
/// unless told otherwise); these create, delete and list them.
extension ChordStore {
    /// Creates the store `name` and returns its description once its creation is
    /// durable. `invalidArgument` for a name against the rules, `alreadyExists` if it
    /// exists, `resourceExhausted` past ``Options/maxStores``.
    @discardableResult
    public func createStore(_ name: String, context: CommandContext = CommandContext()) async throws(ChordStoreError) -> StoreInfo {
        let recorded = try await writer.submit(SubmittedCommand(store: .create(name), context: context)).get().recorded
        // From the event, not a lookup by name: a delete right after must not change the answer.
        guard case .store(.created(let id, let created)) = recorded.event else {
            throw ChordStoreError(.internal, "creating store \(name) recorded a \(recorded.event.kindName)")
        }
        return StoreInfo(
            name: created, id: id, created: recorded.timestamp, chordsets: 0, chords: 0, headSequence: 0,
            logSequence: recorded.logSequence)
    }

    /// The id of the live store `name` (empty: `default`): a stream takes it when it starts
    /// and ends once the name stands for another store (deleted, maybe re-created).
    public func storeID(_ name: String) throws(ChordStoreError) -> UInt32 {
        try backend.withSnapshot(store: name) { $0.record.id }
    }

    /// Deletes the store `name`: its views go and its name is free; its events stay in the
    /// log (replication and audit) and are never shown again, not even by a new store of
    /// the same name. Returns the deletion's event. `notFound` if there is no such store,
    /// `failedPrecondition` for `default`.
    @discardableResult
    public func deleteStore(_ name: String, context: CommandContext = CommandContext()) async throws(ChordStoreError) -> RecordedEvent {
        try await writer.submit(SubmittedCommand(store: .delete(name), context: context)).get().recorded
    }

    /// Up to `limit` live stores after the one named `name` (from the first if `nil`):
    /// `default` first, then the others by name.
    public func stores(after name: String? = nil, limit: Int = 100) throws(ChordStoreError) -> [StoreInfo] {
        guard limit >= 0 else { throw ChordStoreError(.invalidArgument, "limit \(limit) is negative") }
        return try backend.withStores { stores in
            let logSequence = try stores.logHead.sequence
            return try stores.stores(after: name, limit: limit).map { try Self.info($0, in: stores, logSequence: logSequence) }
        }
    }

    /// The store `name`'s description: `notFound` if there is none.
    public func storeInfo(_ name: String) throws(ChordStoreError) -> StoreInfo {
        try backend.withStores { stores in
            let name = StoreName.resolved(name)
            try StoreName.check(name)
            guard let record = try stores.store(named: name) else {
                throw ChordStoreError(.notFound, "there is no store named \(name)", reason: .storeNotFound)
            }
            return try Self.info(record, in: stores, logSequence: try stores.logHead.sequence)
        }
    }

    private static func info(_ record: StoreRecord, in stores: any StoresSnapshot, logSequence: UInt64) throws -> StoreInfo {
        let counts = try stores.counts(of: record)
        return StoreInfo(
            name: record.name, id: record.id, created: record.created.microsecondsSince1970 == 0 ? nil : record.created,
            chordsets: counts.chordsets, chords: counts.chords, headSequence: record.head,
            logSequence: logSequence)
    }
}
