import Foundation
import LMDB

/// What a replica directory of format 1 holds (one LMDB environment, `data.mdb`, with
/// the databases `meta`, `log`, `pending` and `rejected`), read once to move it to
/// format 2 (``ReplicaStorage``). Records and queued writes are kept byte for byte.
struct ReplicaFormat1 {
    /// The data file of a format 1 replica in `directory`.
    static func dataFile(in directory: URL) -> URL { directory.appendingPathComponent("data.mdb") }

    var meta: [String: [UInt8]] = [:]
    var events: [(sequence: UInt64, record: [UInt8])] = []
    var pending: [(key: UInt64, bytes: [UInt8])] = []
    var rejected: [(key: UInt64, bytes: [UInt8])] = []

    /// Reads the format 1 replica in `directory`.
    static func read(_ directory: URL) throws(ReplicaError) -> ReplicaFormat1 {
        var found = ReplicaFormat1()
        do {
            var options = Environment.Options()
            options.noSync = true
            options.maxDatabases = 8
            let environment = try Environment(directory: directory, options: options)
            defer { environment.close() }
            let databases = (
                meta: try environment.openDatabase("meta"), log: try environment.openDatabase("log"),
                pending: try environment.openDatabase("pending"), rejected: try environment.openDatabase("rejected"))
            try environment.withReadTransaction { txn in
                try txn.withCursor(databases.meta) { cursor in
                    var entry = try cursor.first()
                    while let (key, value) = entry {
                        found.meta[String(decoding: key, as: UTF8.self)] = Array(value)
                        entry = try cursor.next()
                    }
                }
                try txn.withCursor(databases.log) { cursor in
                    var entry = try cursor.first()
                    while let (key, value) = entry {
                        found.events.append((number(key), Array(value)))
                        entry = try cursor.next()
                    }
                }
                for (database, keyPath) in [(databases.pending, \ReplicaFormat1.pending), (databases.rejected, \ReplicaFormat1.rejected)] {
                    try txn.withCursor(database) { cursor in
                        var entry = try cursor.first()
                        while let (key, value) = entry {
                            found[keyPath: keyPath].append((number(key), Array(value)))
                            entry = try cursor.next()
                        }
                    }
                }
            }
        } catch {
            throw ReplicaError(.damaged, "cannot read the replica of format 1 in \(directory.path) to move it to format \(ReplicaStorage.format): \(error)")
        }
        guard found.meta["format"] != nil, found.meta["store"] != nil, found.meta["session"] != nil else {
            throw ReplicaError(.damaged, "the replica of format 1 in \(directory.path) has no description (format, store, session)")
        }
        return found
    }

    /// A number as format 1 stored it (8 bytes, big-endian).
    static func number(_ bytes: some Collection<UInt8>) -> UInt64 {
        guard bytes.count == 8 else { return 0 }
        return bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// A number of `meta`, or `nil` if absent.
    func number(_ name: String) -> UInt64? { meta[name].map(Self.number) }

    /// A string of `meta`, or `nil` if absent.
    func string(_ name: String) -> String? { meta[name].map { String(decoding: $0, as: UTF8.self) } }
}
