import ChordStoreRecords
import ChordStoreEngine
import Foundation
import GRDB

/// Changes a closed replica directory's files behind the replica's back, as a damaged
/// disk or a person would (the layout of format 2, docs/DEVICES.md).
enum ReplicaFiles {
    /// Writes a number into a file's `meta`, with a valid checksum (XXH64 of the value
    /// seeded with XXH64 of the name).
    static func setMeta(_ name: String, _ value: UInt64, in file: URL) throws {
        let bytes = withUnsafeBytes(of: value.bigEndian) { Array($0) }
        let checksum = Int64(bitPattern: XXHash64.hash(bytes, seed: XXHash64.hash(name.utf8)))
        let database = try DatabaseQueue(path: file.path)
        try database.write {
            try $0.execute(
                sql: "INSERT OR REPLACE INTO meta (name, value, checksum) VALUES (?, ?, ?)", arguments: [name, Data(bytes), checksum])
        }
        try database.close()
    }

    /// Replaces the first `find` in a row's blob by `replace` (same length), leaving its
    /// checksum as it was: what one flipped byte on the disk does (with `rechecksum`, the
    /// row's own checksum is made to match, as a bug writing wrong bytes would). Returns
    /// whether a row held it.
    @discardableResult
    static func damage(_ file: URL, table: String, column: String, find: String, replace: String, rechecksum: Bool = false) throws -> Bool {
        let database = try DatabaseQueue(path: file.path)
        defer { try? database.close() }
        return try database.write { db in
            let key = table == "events" ? "sequence" : "key"
            for row in try Row.fetchAll(db, sql: "SELECT \(key), \(column) FROM \(table) ORDER BY \(key)") {
                var bytes = Array(row[1] as Data)
                guard let range = bytes.firstRange(of: Array(find.utf8)) else { continue }
                bytes.replaceSubrange(range, with: Array(replace.utf8))
                try db.execute(sql: "UPDATE \(table) SET \(column) = ? WHERE \(key) = ?", arguments: [Data(bytes), row[0] as Int64])
                if rechecksum {
                    let checksum = Int64(bitPattern: XXHash64.hash(bytes, seed: UInt64(row[0] as Int64)))
                    try db.execute(sql: "UPDATE \(table) SET checksum = ? WHERE \(key) = ?", arguments: [checksum, row[0] as Int64])
                }
                return true
            }
            return false
        }
    }

    /// The values of one column of a table, in key order.
    static func column(_ name: String, of table: String, in file: URL) throws -> [DatabaseValue] {
        let database = try DatabaseQueue(path: file.path)
        defer { try? database.close() }
        return try database.read { try DatabaseValue.fetchAll($0, sql: "SELECT \(name) FROM \(table) ORDER BY 1") }
    }

    /// Runs `sql` on `file`.
    static func execute(_ sql: String, in file: URL) throws {
        let database = try DatabaseQueue(path: file.path)
        try database.write { try $0.execute(sql: sql) }
        try database.close()
    }

    /// Flips one bit of byte `offset` of `file`.
    static func flip(_ file: URL, at offset: Int, bit: Int) throws {
        var bytes = try Data(contentsOf: file)
        bytes[offset] ^= UInt8(1 << bit)
        try bytes.write(to: file)
    }
}
