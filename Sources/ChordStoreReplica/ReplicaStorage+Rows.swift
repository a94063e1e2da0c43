import ChordStoreDomain
import ChordStoreRecords
import Foundation
import GRDB

/// The rows of format 2: checksummed values and their tables (docs/DEVICES.md, "The
/// replica format").
extension ReplicaStorage {
    static let queueMigrations: DatabaseMigrator = {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("format 2") { db in
            try db.execute(sql: """
                CREATE TABLE meta (name TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL, checksum INTEGER NOT NULL);
                CREATE TABLE pending (key INTEGER PRIMARY KEY NOT NULL, write BLOB NOT NULL, checksum INTEGER NOT NULL);
                CREATE TABLE rejected (key INTEGER PRIMARY KEY NOT NULL, write BLOB NOT NULL, checksum INTEGER NOT NULL);
                CREATE TABLE unreadable (key INTEGER PRIMARY KEY NOT NULL, write BLOB NOT NULL);
                """)
        }
        return migrator
    }()

    static let eventsMigrations: DatabaseMigrator = {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("format 2") { db in
            try db.execute(sql: """
                CREATE TABLE meta (name TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL, checksum INTEGER NOT NULL);
                CREATE TABLE events (
                    sequence INTEGER PRIMARY KEY NOT NULL, record BLOB NOT NULL, checksum INTEGER NOT NULL, chain_seed INTEGER);
                """)
        }
        return migrator
    }()

    /// A row's checksum: XXH64 of its bytes seeded with its key (a row moved to another
    /// key does not match either), as a signed 64-bit integer, bit for bit.
    static func checksum(_ bytes: some Sequence<UInt8>, key: UInt64) -> Int64 {
        Int64(bitPattern: XXHash64.hash(bytes, seed: key))
    }

    /// A `meta` row's checksum: XXH64 of its value seeded with XXH64 of its name.
    static func checksum(_ bytes: some Sequence<UInt8>, name: String) -> Int64 {
        checksum(bytes, key: XXHash64.hash(name.utf8))
    }

    static func verify(_ raw: UnsafeRawBufferPointer, key: UInt64, checksum stored: Int64, what: String) throws(ReplicaError) {
        guard Int64(bitPattern: XXHash64.hash(raw, seed: key)) == stored else {
            throw ReplicaError(.damaged, "\(what) is damaged: its checksum does not match")
        }
    }

    /// A number as `meta` stores it: 8 bytes, big-endian.
    static func bytes(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }

    static func number(_ bytes: [UInt8]) -> UInt64? {
        guard bytes.count == 8 else { return nil }
        return bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func put(_ db: Database, _ name: String, _ value: [UInt8]) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO meta (name, value, checksum) VALUES (?, ?, ?)")
            .execute(arguments: [name, Data(value), checksum(value, name: name)])
    }

    /// A `meta` value, checked (`nil`: absent).
    static func value(_ db: Database, _ name: String, in file: String) throws -> [UInt8]? {
        guard let row = try Row.fetchOne(db, sql: "SELECT value, checksum FROM meta WHERE name = ?", arguments: [name]) else { return nil }
        guard let value = try row.decode(Data?.self, atIndex: 0).map(Array.init), let stored = try row.decode(Int64?.self, atIndex: 1),
              checksum(value, name: name) == stored
        else { throw ReplicaError(.damaged, "the replica's \(file) description is damaged: its \(name) does not match its checksum") }
        return value
    }

    static func number(_ db: Database, _ name: String, in file: String) throws -> UInt64? {
        guard let bytes = try value(db, name, in: file) else { return nil }
        guard let number = number(bytes) else {
            throw ReplicaError(.damaged, "the replica's \(file) description is damaged: its \(name) is not a number")
        }
        return number
    }

    static func putPending(_ db: Database, _ write: PendingWrite, session: String) throws {
        let bytes = PendingWriteCodec.encode(write, session: session)
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO pending (key, write, checksum) VALUES (?, ?, ?)")
            .execute(arguments: [Int64(clamping: write.key), Data(bytes), checksum(bytes, key: write.key)])
    }

    static func putRejected(_ db: Database, _ rejection: RejectedWrite, session: String) throws {
        let bytes = PendingWriteCodec.encode(rejection, session: session)
        let key = rejection.write.key
        try db.execute(
            sql: "INSERT OR REPLACE INTO rejected (key, write, checksum) VALUES (?, ?, ?)",
            arguments: [Int64(clamping: key), Data(bytes), checksum(bytes, key: key)])
        try db.execute(
            sql: "DELETE FROM rejected WHERE key NOT IN (SELECT key FROM rejected ORDER BY key DESC LIMIT ?)", arguments: [maxRejected])
    }

    /// A row of a table keyed by a number, read without trusting it: `nil` fields where
    /// the damaged row holds no value of the expected type.
    struct KeyedRow {
        let key: UInt64
        let bytes: [UInt8]?
        let checksum: Int64?

        init(_ row: Row) throws {
            key = UInt64(clamping: try row.decode(Int64?.self, atIndex: 0) ?? 0)
            bytes = try? row.decode(Data?.self, atIndex: 1).map(Array.init)
            checksum = try? row.decode(Int64?.self, atIndex: 2)
        }

        /// Whether its checksum matches its bytes.
        var isIntact: Bool {
            guard let bytes, let checksum else { return false }
            return ReplicaStorage.checksum(bytes, key: key) == checksum
        }
    }
}
