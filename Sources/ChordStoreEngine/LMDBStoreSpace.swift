import ChordStoreRecords
import ChordStoreDomain
import Foundation
import LMDB

/// Every store of the LMDB backend in one transaction of each environment: the registry
/// (``StoreDatabases/stores``), each store's view, and the log. A commit writes through
/// it; a snapshot reads through it.
struct LMDBStoreSpace: StoreSpace, StoresSnapshot {
    let txn: Transaction
    /// `nil` over views alone (``ViewsOnlyBackend``): reads that need the log fail.
    let logTxn: Transaction?
    let dbs: StoreDatabases
    var logHead: LogHead
    /// Whether records go to the log (`false` when the log holds them already and only the
    /// views take them, catching up).
    var storesRecords = true
    /// The registry entries this transaction read or changed: each is read once, and the
    /// heads advanced by a batch are written once, by ``flush()``.
    private let cache = RegistryCache()

    init(txn: Transaction, logTxn: Transaction?, dbs: StoreDatabases, logHead: LogHead, storesRecords: Bool = true) {
        self.txn = txn
        self.logTxn = logTxn
        self.dbs = dbs
        self.logHead = logHead
        self.storesRecords = storesRecords
    }

    private final class RegistryCache {
        /// The first store noted, held apart: most transactions (every read of one store)
        /// touch one store, which then costs no dictionary.
        private var first: StoreRecord?
        private var byName: [String: StoreRecord] = [:]
        private var byID: [UInt32: StoreRecord] = [:]
        var dirty: Set<UInt32> = []
        /// ``lastStoreID()``, once read.
        var lastStoreID: UInt32?
        /// The store-wide revisions the transaction's events advanced, written by
        /// ``flush()``.
        let revisions = PendingRevisions()

        func record(named name: String) -> StoreRecord? {
            if let first, first.name == name { return first }
            return byName[name]
        }

        func record(id: UInt32) -> StoreRecord? {
            if let first, first.id == id { return first }
            return byID[id]
        }

        func note(_ record: StoreRecord) {
            if first == nil || first?.id == record.id {
                first = record
            } else {
                byName[record.name] = record
                byID[record.id] = record
            }
        }

        func forget(_ record: StoreRecord) {
            if first?.id == record.id { first = nil }
            byName[record.name] = nil
            byID[record.id] = nil
        }
    }

    func store(named name: String) throws -> StoreRecord? {
        if let cached = cache.record(named: name) { return cached }
        var name = name
        guard let id = try name.withUTF8({ try txn.get(dbs.storeNames, key: UnsafeRawBufferPointer($0)) }) else {
            return name == StoreName.default ? try store(id: 0) : nil
        }
        guard id.count == 4 else { throw ChordStoreError(.dataLoss, "the id of store \(name) is \(id.count) bytes; they are 4") }
        return try store(id: UInt32(bigEndian: id.loadUnaligned(as: UInt32.self)))
    }

    func store(id: UInt32) throws -> StoreRecord? {
        if let cached = cache.record(id: id) { return cached }
        guard let bytes = try registryEntry(id) else { return id == 0 ? .initialDefault : nil }
        let record = try StoreRecord(id: id, bytes: bytes)
        cache.note(record)
        return record
    }

    /// Store `id`'s registry entry, its key held inline (no array per lookup).
    private func registryEntry(_ id: UInt32) throws -> UnsafeRawBufferPointer? {
        try StoreRecord.keyPrefix(id).withViewBytes { try txn.get(dbs.stores, key: $0) }
    }

    /// Writes the registry entries and the store-wide revisions changed since the last
    /// flush (before the transaction commits).
    func flush() throws {
        try cache.revisions.flush(txn, dbs: dbs)
        for id in cache.dirty.sorted() {
            guard let record = cache.record(id: id) else { continue }
            try txn.put(dbs.stores, key: record.prefix, value: record.bytes)
        }
        cache.dirty.removeAll()
    }

    func storeCount() throws -> Int {
        let entries = try txn.stat(dbs.stores).entries
        return try txn.get(dbs.stores, key: StoreRecord.prefix(0)) == nil ? entries + 1 : entries
    }

    func lastStoreID() throws -> UInt32 {
        guard let bytes = try txn.get(dbs.meta, key: StoreDatabases.lastStoreKey), bytes.count == 4 else { return 0 }
        return UInt32(bigEndian: bytes.loadUnaligned(as: UInt32.self))
    }

    func stores(after name: String?, limit: Int) throws -> [StoreRecord] {
        var result: [StoreRecord] = []
        guard limit > 0 else { return result }
        // `default` first, then the others by name.
        if name == nil, let first = try store(id: 0) { result.append(first) }
        let seek = name == nil || name == StoreName.default ? "" : name!
        var ids: [UInt32] = []
        try txn.withCursor(dbs.storeNames) { cursor in
            var entry = seek.isEmpty ? try cursor.first() : try Array(seek.utf8).withUnsafeBytes { try cursor.seek(atLeast: $0) }
            while let current = entry, result.count + ids.count < limit {
                let found = String(decoding: current.key, as: UTF8.self)
                if found != name, found != StoreName.default, current.value.count == 4 {
                    ids.append(UInt32(bigEndian: current.value.loadUnaligned(as: UInt32.self)))
                }
                entry = try cursor.next()
            }
        }
        for id in ids { if let record = try store(id: id) { result.append(record) } }
        return result
    }

    func snapshot(of store: StoreRecord) throws -> any StoreSnapshot {
        LMDBStateView(txn: txn, logTxn: logTxn, dbs: dbs, store: store, pending: cache.revisions)
    }

    mutating func appendRecord(_ logSequence: UInt64, _ bytes: [UInt8]) throws {
        guard storesRecords else { return }
        guard let logTxn else { throw ViewsOnlyBackend.logArriving }
        try KeyBytes.sequence(logSequence).withViewBytes { key in
            try bytes.withUnsafeBytes { try logTxn.put(dbs.log, key: key, value: $0, flags: .append) }
        }
    }

    mutating func withStore<T>(
        _ store: StoreRecord, _ body: (inout LMDBStateView, inout LMDBStateView, inout LMDBStateView) throws -> T
    ) throws -> T {
        var view = LMDBStateView(
            txn: txn, logTxn: logTxn, dbs: dbs, store: store, isLastStore: try isLastStore(store.id), pending: cache.revisions)
        var changes = view
        var log = view
        return try body(&view, &changes, &log)
    }

    /// Whether the store with `id` has the largest id ever given (its keys then end every
    /// view database of store-prefixed keys: a deleted store's views go with it); the
    /// last id is read once per transaction.
    private func isLastStore(_ id: UInt32) throws -> Bool {
        if let last = cache.lastStoreID { return id >= last }
        let last = try lastStoreID()
        cache.lastStoreID = last
        return id >= last
    }

    mutating func save(_ store: StoreRecord) throws {
        if cache.record(id: store.id) == nil, try registryEntry(store.id) == nil {
            // A new entry: its name and the last id at once, its record below.
            let key = store.prefix
            try txn.put(dbs.storeNames, key: Array(store.name.utf8), value: key)
            if store.id > (try lastStoreID()) {
                try txn.put(dbs.meta, key: StoreDatabases.lastStoreKey, value: key)
                cache.lastStoreID = store.id
            }
            try txn.put(dbs.stores, key: key, value: store.bytes)
        } else {
            cache.dirty.insert(store.id)
        }
        cache.note(store)
    }

    func token(id: String) throws -> TokenRecord? {
        try txn.get(dbs.tokens, key: Array(id.utf8)).map { try TokenRecord(id: id, bytes: $0) }
    }

    func tokenCount() throws -> Int { try txn.stat(dbs.tokens).entries }

    func tokens() throws -> [TokenRecord] {
        var result: [TokenRecord] = []
        try txn.withCursor(dbs.tokens) { cursor in
            var entry = try cursor.first()
            while let current = entry {
                result.append(try TokenRecord(id: String(decoding: current.key, as: UTF8.self), bytes: current.value))
                entry = try cursor.next()
            }
        }
        return result
    }

    mutating func saveToken(_ token: TokenRecord) throws {
        try txn.put(dbs.tokens, key: Array(token.grant.id.utf8), value: token.bytes)
    }

    mutating func removeToken(id: String) throws {
        try txn.delete(dbs.tokens, key: Array(id.utf8))
    }

    mutating func removeTokens(ofStore storeID: UInt32) throws {
        for token in try tokens() where token.grant.role.isScoped && token.grant.storeID == storeID {
            try removeToken(id: token.grant.id)
        }
    }

    mutating func remove(_ store: StoreRecord) throws {
        let scoped = ScopedTransaction(txn, store: store.id)
        for db in dbs.storeViews { try scoped.empty(db) }
        try txn.delete(dbs.stores, key: store.prefix)
        try txn.delete(dbs.storeNames, key: Array(store.name.utf8))
        cache.forget(store)
        cache.dirty.remove(store.id)
        cache.revisions.forget(store: store.id)
    }
}
