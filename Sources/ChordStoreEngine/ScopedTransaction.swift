import ChordStoreDomain
import Foundation
import LMDB

/// One store's part of the views: a transaction whose keys all carry the store's 4-byte
/// prefix (``StoreRecord/prefix``), added on the way in and removed on the way out, so
/// the store's views read and write as if they had the databases to themselves. Every
/// store's views share the same databases; the prefix keeps them apart and in id order.
struct ScopedTransaction {
    let txn: Transaction
    let prefix: [UInt8]

    init(_ txn: Transaction, prefix: [UInt8]) {
        self.txn = txn
        self.prefix = prefix
    }

    /// Calls `body` with the prefix and `key` side by side, on the stack (no allocation
    /// per key: a commit makes a few dozen).
    private func withScoped<T>(_ key: some ContiguousBytes, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        try key.withUnsafeBytes { key in
            try withUnsafeTemporaryAllocation(byteCount: prefix.count + key.count, alignment: 1) { buffer in
                prefix.withUnsafeBytes { buffer.copyMemory(from: $0) }
                UnsafeMutableRawBufferPointer(rebasing: buffer[prefix.count...]).copyMemory(from: key)
                return try body(UnsafeRawBufferPointer(buffer))
            }
        }
    }

    /// The value stored under `key`, or `nil`.
    func get(_ db: Database, key: some ContiguousBytes) throws -> UnsafeRawBufferPointer? {
        try withScoped(key) { try txn.get(db, key: $0) }
    }

    /// Stores `value` under `key`. `MDB_APPEND` is not passed on: the store's keys are not
    /// the last of the database when a later store has some.
    func put(_ db: Database, key: some ContiguousBytes, value: some ContiguousBytes, flags: PutFlags = []) throws {
        try withScoped(key) { key in
            try value.withUnsafeBytes { try txn.put(db, key: key, value: $0, flags: flags.subtracting(.append)) }
        }
    }

    /// Stores `value` under a new `key` that is likely the database's last (a new
    /// chordset's: the writer's ids increase): with `MDB_APPEND`, so that LMDB leaves the
    /// page it splits full instead of moving its last entry to the new one, which left
    /// the chordsets' pages five rows full of six. Where the key is not the last (a later
    /// store has keys, or the client chose the id), as ``put(_:key:value:flags:)`` does.
    func putAtEnd(_ db: Database, key: some ContiguousBytes, value: some ContiguousBytes) throws {
        try withScoped(key) { key in
            try value.withUnsafeBytes { value in
                do {
                    try txn.put(db, key: key, value: value, flags: .append)
                } catch let error as LMDBError where error.isKeyExists {
                    try txn.put(db, key: key, value: value)
                }
            }
        }
    }

    /// Deletes `key`; returns whether it was present.
    @discardableResult
    func delete(_ db: Database, key: some ContiguousBytes) throws -> Bool {
        try withScoped(key) { try txn.delete(db, key: $0) }
    }

    /// Deletes every key of the store in `db`.
    func empty(_ db: Database) throws {
        var doomed: [[UInt8]] = []
        try withCursor(db) { cursor in
            var entry = try cursor.first()
            while let current = entry {
                doomed.append(prefix + current.key)
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
            var scoped = ScopedCursor(cursor: cursor, prefix: prefix)
            return try body(&scoped)
        }
    }
}

/// A cursor over one store's keys (see ``ScopedTransaction``): it never leaves them, and
/// its entries' keys come without the prefix.
struct ScopedCursor {
    var cursor: Cursor
    let prefix: [UInt8]

    private func unscoped(_ entry: Cursor.Entry?) -> Cursor.Entry? {
        guard let entry, entry.key.count >= prefix.count,
              prefix.withUnsafeBytes({ $0.elementsEqual(UnsafeRawBufferPointer(rebasing: entry.key.prefix(prefix.count))) })
        else { return nil }
        return (UnsafeRawBufferPointer(rebasing: entry.key[prefix.count...]), entry.value)
    }

    /// The store's first entry.
    mutating func first() throws -> Cursor.Entry? {
        try prefix.withUnsafeBytes { p in try unscoped(cursor.seek(atLeast: p)) }
    }

    /// The store's last entry.
    mutating func last() throws -> Cursor.Entry? {
        // The first key past the store's: the prefix plus one, as a number.
        var after = prefix
        var index = after.count - 1
        while index >= 0 {
            if after[index] == 0xFF {
                after[index] = 0
                index -= 1
            } else {
                after[index] += 1
                break
            }
        }
        if index < 0 { return try unscoped(cursor.last()) }
        let found = try after.withUnsafeBytes { try cursor.seek(atLeast: $0) }
        return try unscoped(found == nil ? cursor.last() : cursor.previous())
    }

    mutating func next() throws -> Cursor.Entry? { try unscoped(cursor.next()) }
    mutating func previous() throws -> Cursor.Entry? { try unscoped(cursor.previous()) }

    /// The store's first entry whose key is at least `key`.
    mutating func seek(atLeast key: UnsafeRawBufferPointer) throws -> Cursor.Entry? {
        let full = prefix + key
        return try full.withUnsafeBytes { try unscoped(cursor.seek(atLeast: $0)) }
    }

    /// Stores `value` under `key` through the cursor (``ViewLoader``: stores are loaded in
    /// id order, so `MDB_APPEND` holds across them).
    mutating func put(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, flags: PutFlags = []) throws {
        let full = prefix + key
        try full.withUnsafeBytes { try cursor.put(key: $0, value: value, flags: flags) }
    }
}
