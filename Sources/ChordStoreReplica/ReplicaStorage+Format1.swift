import Foundation
import GRDB

/// Moving a replica directory of format 1 (LMDB) to format 2.
extension ReplicaStorage {
    /// The `meta` name that says the queue was moved from format 1 (so LMDB files still
    /// beside it are the move's leftovers, not an older version's later writes).
    static let movedMarker = "moved_from_format_1"

    /// Moves a format 1 directory to format 2: every event, queued and rejected write
    /// byte for byte, into new files that take their names only when complete (the queue
    /// last: its name is what says the directory is of format 2); then the LMDB files go.
    /// The device session stays (the installation is recorded anew by the open that
    /// follows), unless format 1 had recorded another installation: then the directory
    /// was copied and gets a session of its own, as for format 2.
    static func move(format1 old: ReplicaFormat1, in directory: URL, newSession: () -> String) throws(ReplicaError) {
        var session = old.string("session") ?? newSession()
        if let recorded = old.string("installation").flatMap(Installation.init), Installation(of: ReplicaFormat1.dataFile(in: directory)) != recorded {
            session = newSession()
        }
        let movingEvents = directory.appendingPathComponent("moving-" + eventsFile)
        let movingQueue = directory.appendingPathComponent("moving-" + queueFile)
        for file in [movingEvents, movingQueue] {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file.path + suffix) }
        }
        do {
            let events = try database(movingEvents, migrations: eventsMigrations, flushEveryWrite: true, what: "the moved copy of the events")
            try events.write { db in
                let insert = try db.cachedStatement(sql: "INSERT INTO events (sequence, record, checksum) VALUES (?, ?, ?)")
                for event in old.events {
                    try insert.execute(arguments: [Int64(clamping: event.sequence), Data(event.record), checksum(event.record, key: event.sequence)])
                }
                try put(db, "head", bytes(old.number("head") ?? 0))
            }
            try events.close()
            let queue = try database(movingQueue, migrations: queueMigrations, flushEveryWrite: true, what: "the moved queue")
            try queue.write { db in
                for (table, rows) in [("pending", old.pending), ("rejected", old.rejected)] {
                    for (key, bytes) in rows {
                        try db.execute(
                            sql: "INSERT INTO \(table) (key, write, checksum) VALUES (?, ?, ?)",
                            arguments: [Int64(clamping: key), Data(bytes), checksum(bytes, key: key)])
                    }
                }
                var meta = Meta(format: format, store: old.string("store") ?? "", session: session)
                meta.nextKey = old.number("next_key") ?? 1
                meta.storeID = old.number("store_id").map { UInt32(clamping: $0) }
                try putMeta(db, meta)
                try put(db, movedMarker, [1])
            }
            try queue.close()
            removeEventsFiles(directory)
            try FileManager.default.moveItem(at: movingEvents, to: directory.appendingPathComponent(eventsFile))
            try FileManager.default.moveItem(at: movingQueue, to: directory.appendingPathComponent(queueFile))
        } catch let error as ReplicaError {
            throw error
        } catch {
            throw ReplicaError(.storage, "cannot move the replica in \(directory.path) to format \(format): \(error)")
        }
        removeFormat1(directory)
    }

    static func removeFormat1(_ directory: URL) {
        try? FileManager.default.removeItem(at: ReplicaFormat1.dataFile(in: directory))
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("lock.mdb"))
    }

    /// Deals with format 1's files found beside the queue: the leftovers of a move that
    /// stopped after its last rename are removed; files an older version wrote after the
    /// move are renamed aside, never read.
    func settleFormat1Leftovers() throws(ReplicaError) {
        let marked = try readQueue { db in try Self.value(db, Self.movedMarker, in: "queue") != nil }
        if marked {
            Self.removeFormat1(directory)
            return
        }
        let aside = directory.appendingPathComponent("format1-left-data.mdb")
        try? FileManager.default.removeItem(at: aside)
        do {
            try FileManager.default.moveItem(at: ReplicaFormat1.dataFile(in: directory), to: aside)
        } catch {
            throw ReplicaError(.storage, "cannot rename the format 1 files in \(directory.path) aside: \(error)")
        }
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("lock.mdb"))
        note(ReplicaDamage(
            .format1LeftAside,
            "\(directory.path) held format 1 files written after it was moved to format 2 (by an older version): renamed format1-left-data.mdb, not read"))
    }
}
