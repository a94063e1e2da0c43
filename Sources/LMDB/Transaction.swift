public import Foundation
internal import CLMDB

/// A transaction, valid only inside the closure of ``Environment/withReadTransaction(_:)``
/// or ``Environment/withWriteTransaction(_:)``. Buffers it returns point into the map and
/// are valid until the transaction ends (or, in a write transaction, until the next write).
public struct Transaction {
    let handle: OpaquePointer
    /// Whether this is a read-only snapshot.
    public let isReadOnly: Bool

    /// The existing database `name`, for this transaction only (a read-only environment
    /// opens its databases this way); `MDB_NOTFOUND` if there is none.
    public func existingDatabase(_ name: String) throws(LMDBError) -> Database {
        var dbi: MDB_dbi = 0
        try check(mdb_dbi_open(handle, name, 0, &dbi), "mdb_dbi_open(\(name))")
        return Database(handle: dbi, name: name)
    }

    /// The value stored under `key`, or `nil`.
    public func get(_ db: Database, key: UnsafeRawBufferPointer) throws(LMDBError) -> UnsafeRawBufferPointer? {
        var k = MDB_val(key)
        var v = MDB_val()
        let rc = mdb_get(handle, db.handle, &k, &v)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "mdb_get(\(db.name))")
        return v.bytes
    }

    /// The value stored under `key`, or `nil`.
    public func get(_ db: Database, key: some ContiguousBytes) throws -> UnsafeRawBufferPointer? {
        try key.withUnsafeBytes { k in try get(db, key: k) }
    }

    /// Stores `value` under `key`.
    public func put(
        _ db: Database, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, flags: PutFlags = []
    ) throws(LMDBError) {
        var k = MDB_val(key)
        var v = MDB_val(value)
        try check(mdb_put(handle, db.handle, &k, &v, flags.rawValue), "mdb_put(\(db.name))")
    }

    /// Stores `value` under `key`.
    public func put(_ db: Database, key: some ContiguousBytes, value: some ContiguousBytes, flags: PutFlags = []) throws {
        try key.withUnsafeBytes { k in
            try value.withUnsafeBytes { v in try put(db, key: k, value: v, flags: flags) }
        }
    }

    /// Deletes `key`; returns whether it was present.
    @discardableResult
    public func delete(_ db: Database, key: some ContiguousBytes) throws -> Bool {
        try key.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws(LMDBError) -> Bool in
            var k = MDB_val(raw)
            let rc = mdb_del(handle, db.handle, &k, nil)
            if rc == MDB_NOTFOUND { return false }
            try check(rc, "mdb_del(\(db.name))")
            return true
        }
    }

    /// Deletes every key of `db` (the database itself stays open).
    public func empty(_ db: Database) throws(LMDBError) {
        try check(mdb_drop(handle, db.handle, 0), "mdb_drop(\(db.name))")
    }

    /// Deletes `db` itself with all its keys; its handle is invalid afterwards.
    public func drop(_ db: Database) throws(LMDBError) {
        try check(mdb_drop(handle, db.handle, 1), "mdb_drop(\(db.name), delete)")
    }

    /// Entry count and tree shape of `db`.
    public func stat(_ db: Database) throws(LMDBError) -> DatabaseStat {
        var s = MDB_stat()
        try check(mdb_stat(handle, db.handle, &s), "mdb_stat(\(db.name))")
        return DatabaseStat(
            entries: s.ms_entries, depth: Int(s.ms_depth),
            pages: s.ms_branch_pages + s.ms_leaf_pages + s.ms_overflow_pages)
    }

    /// Runs `body` with a cursor over `db`, closed when `body` returns.
    public func withCursor<T>(_ db: Database, _ body: (inout Cursor) throws -> T) throws -> T {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(handle, db.handle, &cursor), "mdb_cursor_open(\(db.name))")
        var wrapped = Cursor(handle: cursor!, name: db.name)
        defer { mdb_cursor_close(cursor) }
        return try body(&wrapped)
    }
}
