import ChordStoreRecords
import ChordStoreDomain
import Foundation
import LMDB

/// One store's part of the views: a transaction whose keys all carry the store's 4-byte
/// prefix (``StoreRecord/prefix``), added on the way in and removed on the way out, so
/// the store's views read and write as if they had the databases to themselves. Every
/// store's views share the same databases; the prefix keeps them apart and in id order.
struct ScopedTransaction {
    let txn: Transaction
    /// The store's id, whose 4 bytes big-endian are the prefix.
    let storeID: UInt32
    /// Whether no store with a larger id has keys in the views (the store's keys then end
    /// every database of store-prefixed keys; `meta` also holds keys of no store): only
    /// then does ``putAtEnd(_:key:value:)`` try to append.
    let isLastStore: Bool

    init(_ txn: Transaction, store storeID: UInt32, isLastStore: Bool = false) {
        self.txn = txn
        self.storeID = storeID
        self.isLastStore = isLastStore
    }

    /// The prefix, inline.
    var prefix: KeyBytes { StoreRecord.keyPrefix(storeID) }

    /// Calls `body` with the prefix and `key` side by side, on the stack (no allocation
    /// per key: a commit makes a few dozen).
    private func withScoped<T>(_ key: some ViewBytes, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        try key.withViewBytes { try Self.withPrefixed(prefix, $0, body) }
    }

    /// `body` called with `prefix` then `key`, side by side on the stack.
    static func withPrefixed<T>(
        _ prefix: KeyBytes, _ key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> T
    ) throws -> T {
        try prefix.withViewBytes { prefix in
            try withUnsafeTemporaryAllocation(byteCount: prefix.count + key.count, alignment: 1) { buffer in
                buffer.copyMemory(from: prefix)
                UnsafeMutableRawBufferPointer(rebasing: buffer[prefix.count...]).copyMemory(from: key)
                return try body(UnsafeRawBufferPointer(buffer))
            }
        }
    }

    /// The value stored under `key`, or `nil`.
    func get(_ db: Database, key: some ViewBytes) throws -> UnsafeRawBufferPointer? {
        try withScoped(key) { try txn.get(db, key: $0) }
    }

    /// Stores `value` under `key`. `MDB_APPEND` is not passed on: the store's keys are not
    /// the last of the database when a later store has some.
    func put(_ db: Database, key: some ViewBytes, value: some ViewBytes, flags: PutFlags = []) throws {
        try withScoped(key) { key in
            try value.withViewBytes { try txn.put(db, key: key, value: $0, flags: flags.subtracting(.append)) }
        }
    }

    /// Stores `value` under a new `key` that is likely the store's last in `db` (a new
    /// chordset's id: the writer's ids increase; a sequence number; a creation time):
    /// with `MDB_APPEND` when the store is the last (``isLastStore``), which finds the
    /// database's last page without comparing keys on the way down and leaves the page it
    /// splits full instead of moving its last entry to the new one (that left the
    /// chordsets' pages five rows full of six). Where the key is not the last after all
    /// (an earlier creation time), as ``put(_:key:value:flags:)`` does.
    func putAtEnd(_ db: Database, key: some ViewBytes, value: some ViewBytes) throws {
        guard isLastStore else { return try put(db, key: key, value: value) }
        try withScoped(key) { key in
            try value.withViewBytes { value in
                do {
                    try txn.put(db, key: key, value: value, flags: .append)
                } catch let error as LMDBError where error.isKeyExists {
                    try txn.put(db, key: key, value: value)
                }
            }
        }
    }

    /// Replaces the value under `key` with what `change` makes of it (`nil`: the key is
    /// absent): one search of the tree where `key` is present (the value is written at
    /// the cursor, in place), two where it is not. `change` may write other databases,
    /// not `db` (the bytes it is given, and the cursor, would no longer be valid).
    func update<Value: ViewBytes>(_ db: Database, key: some ViewBytes, _ change: (UnsafeRawBufferPointer?) throws -> Value) throws {
        try withScoped(key) { key in
            try txn.withCursor(db) { cursor in
                if let present = try cursor.find(key) {
                    let value = try change(present)
                    try value.withViewBytes { try cursor.replaceCurrent(key: key, value: $0) }
                } else {
                    let value = try change(nil)
                    try value.withViewBytes { try cursor.put(key: key, value: $0) }
                }
            }
        }
    }

    /// Stores under `key` the bytes `absent` gives, or, if `key` is present, those
    /// `present` makes of its value: one search of the tree either way (a put that does
    /// not overwrite, then, where the key was present, a write at the cursor). For a key
    /// more often new than not; ``update(_:key:_:)`` is the other way round. `present`
    /// reads its bytes before it writes (they are not valid after).
    func upsert(
        _ db: Database, key: some ViewBytes,
        absent: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void,
        present: (UnsafeRawBufferPointer, (UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws {
        try withScoped(key) { key in
            try txn.withCursor(db) { cursor in
                var existing: UnsafeRawBufferPointer?
                try absent { existing = try cursor.putIfAbsent(key: key, value: $0) }
                guard let existing else { return }
                try present(existing) { try cursor.replaceCurrent(key: key, value: $0) }
            }
        }
    }

    /// Stores the revision of `key` in the revisions database `db` (its layouts:
    /// ``KeyBytes/revision(_:)``, ``StoreKeys/withRevision(_:_:)``).
    func putRevision(_ db: Database, _ key: RevisionKey, _ revision: Revision) throws {
        try StoreKeys.withRevision(revision) { try put(db, key: KeyBytes.revision(key), value: $0) }
    }

    /// Deletes `key`; returns whether it was present.
    @discardableResult
    func delete(_ db: Database, key: some ViewBytes) throws -> Bool {
        try withScoped(key) { try txn.delete(db, key: $0) }
    }

    /// Deletes every key of the store in `db`.
    func empty(_ db: Database) throws {
        var doomed: [[UInt8]] = []
        try withCursor(db) { cursor in
            var entry = try cursor.first()
            while let current = entry {
                doomed.append(prefix.array + current.key)
                entry = try cursor.next()
            }
        }
        for key in doomed { try txn.delete(db, key: key) }
    }

    /// How many keys the store has in `db` (a scan).
    func count(_ db: Database) throws -> Int {
        var count = 0
        try withCursor(db) { cursor in
            var entry = try cursor.first()
            while entry != nil {
                count += 1
                entry = try cursor.next()
            }
        }
        return count
    }

    /// Runs `body` with a cursor over the store's keys of `db`.
    func withCursor<T>(_ db: Database, _ body: (inout ScopedCursor) throws -> T) throws -> T {
        try txn.withCursor(db) { cursor in
            var scoped = ScopedCursor(cursor: cursor, storeID: storeID)
            return try body(&scoped)
        }
    }
}

/// A cursor over one store's keys (see ``ScopedTransaction``): it never leaves them, and
/// its entries' keys come without the prefix.
struct ScopedCursor {
    var cursor: Cursor
    /// The store's id, whose 4 bytes big-endian are the prefix.
    let storeID: UInt32

    private var prefix: KeyBytes { StoreRecord.keyPrefix(storeID) }

    private func unscoped(_ entry: Cursor.Entry?) -> Cursor.Entry? {
        guard let entry, entry.key.count >= 4,
              UInt32(bigEndian: entry.key.loadUnaligned(as: UInt32.self)) == storeID
        else { return nil }
        return (UnsafeRawBufferPointer(rebasing: entry.key[4...]), entry.value)
    }

    /// The store's first entry.
    mutating func first() throws -> Cursor.Entry? {
        try prefix.withViewBytes { p in try unscoped(cursor.seek(atLeast: p)) }
    }

    /// The store's last entry.
    mutating func last() throws -> Cursor.Entry? {
        // The first key past the store's: the prefix plus one, as a number.
        guard storeID < .max else { return try unscoped(cursor.last()) }
        let found = try StoreRecord.keyPrefix(storeID + 1).withViewBytes { try cursor.seek(atLeast: $0) }
        return try unscoped(found == nil ? cursor.last() : cursor.previous())
    }

    mutating func next() throws -> Cursor.Entry? { try unscoped(cursor.next()) }
    mutating func previous() throws -> Cursor.Entry? { try unscoped(cursor.previous()) }

    /// The store's first entry whose key is at least `key`.
    mutating func seek(atLeast key: UnsafeRawBufferPointer) throws -> Cursor.Entry? {
        let found = try ScopedTransaction.withPrefixed(prefix, key) { try cursor.seek(atLeast: $0) }
        return unscoped(found)
    }

    /// Stores `value` under `key` through the cursor (``ViewLoader``: stores are loaded in
    /// id order, so `MDB_APPEND` holds across them).
    mutating func put(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, flags: PutFlags = []) throws {
        try ScopedTransaction.withPrefixed(prefix, key) { try cursor.put(key: $0, value: value, flags: flags) }
    }
}
