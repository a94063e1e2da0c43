public import ChordStoreReplica
package import Foundation
import LMDB

/// Reading a device replica directory of format 1 (LMDB), so that ``Replica/open(at:store:options:)``
/// can move it to format 2: a module of its own because LMDB is a Linux system library
/// that an app for iOS does not build (format 1 only ever ran on Linux).
extension ReplicaFormat1 {
    /// Reads the format 1 replica in `directory` (LMDB), every database whole.
    package static func read(_ directory: URL) throws(ReplicaError) -> ReplicaFormat1 {
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
                        found.events.append((ReplicaFormat1.number(key), Array(value)))
                        entry = try cursor.next()
                    }
                }
                for (database, keyPath) in [(databases.pending, \ReplicaFormat1.pending), (databases.rejected, \ReplicaFormat1.rejected)] {
                    try txn.withCursor(database) { cursor in
                        var entry = try cursor.first()
                        while let (key, value) = entry {
                            found[keyPath: keyPath].append((ReplicaFormat1.number(key), Array(value)))
                            entry = try cursor.next()
                        }
                    }
                }
            }
        } catch {
            throw ReplicaError(.damaged, "cannot read the replica of format 1 in \(directory.path) to move it to format \(2): \(error)")
        }
        guard found.meta["format"] != nil, found.meta["store"] != nil, found.meta["session"] != nil else {
            throw ReplicaError(.damaged, "the replica of format 1 in \(directory.path) has no description (format, store, session)")
        }
        return found
    }

}

extension Replica.Options {
    /// The defaults, able to move a directory of format 1 (LMDB) to format 2 on open
    /// (``ReplicaFormat1/read(_:)``).
    public static var movingFormat1: Replica.Options {
        var options = Replica.Options()
        options.format1Reader = ReplicaFormat1.read
        return options
    }
}
