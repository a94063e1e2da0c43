import Foundation
import GRDB

/// A replica's directory opened for reading beside the app's process (an app extension,
/// a widget): SQLite's WAL mode lets readers read while one process writes. A reader
/// takes no lock, writes nothing (no migration, no repair, no flush, no saved view), and
/// refuses what it would have to repair: the app's next open repairs it.
extension ReplicaStorage {
    /// Opens `directory`'s replica for reading; it must have been made by the app (format
    /// 2: a directory of format 1 is moved by the app's first open).
    static func openForReading(_ directory: URL) throws(ReplicaError) -> (ReplicaStorage, Meta) {
        let fileManager = FileManager.default
        let queuePath = directory.appendingPathComponent(queueFile)
        guard fileManager.fileExists(atPath: queuePath.path) else {
            if fileManager.fileExists(atPath: ReplicaFormat1.dataFile(in: directory).path) {
                throw ReplicaError(
                    .formatNeedsMove, "\(directory.path) holds a replica of format 1 (LMDB): the app's first open moves it to format \(format); read it after that")
            }
            throw ReplicaError(.noReplica, "\(directory.path) holds no replica (the app makes it at its first open)")
        }
        let queue = try readerDatabase(queuePath, migrations: queueMigrations, what: "the replica's queue")
        let events: DatabaseQueue
        do {
            events = try readerDatabase(
                directory.appendingPathComponent(eventsFile), migrations: eventsMigrations, what: "the replica's copy of the events", derived: true)
        } catch {
            try? queue.close()
            throw error
        }
        let storage = ReplicaStorage(directory: directory, lock: nil, queue: queue, events: events, flushEveryWrite: false)
        do throws(ReplicaError) {
            guard let meta = try storage.readMeta(newSession: { "" }) else {
                throw ReplicaError(.noReplica, "\(directory.path) holds no replica yet (the app is making it)")
            }
            if meta.format > format {
                throw ReplicaError(
                    .formatTooNew, "\(directory.path) was written by a newer ChordStore (replica format \(meta.format); this version reads up to \(format))")
            }
            return (storage, meta)
        } catch {
            storage.close()
            throw error
        }
    }

    /// Opens one of the two databases read-only, as the app's version left it: tables
    /// of a newer version are refused (`formatTooNew`; `damaged` in the copy of the
    /// events, which the app drops and copies again), a database the app has not finished
    /// making is `noReplica`.
    static func readerDatabase(_ file: URL, migrations: DatabaseMigrator, what: String, derived: Bool = false) throws(ReplicaError) -> DatabaseQueue {
        guard FileManager.default.fileExists(atPath: file.path) else {
            throw ReplicaError(.noReplica, "\(what) (\(file.lastPathComponent)) is missing: the app's next open makes it")
        }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(2)
        do {
            let database = try DatabaseQueue(path: file.path, configuration: configuration)
            try database.read { db in
                if try migrations.hasBeenSuperseded(db) {
                    if derived { throw ReplicaError(.damaged, "\(what) names tables this version does not know (the app's next open copies it again)") }
                    throw ReplicaError(.formatTooNew, "\(file.path) was written by a newer ChordStore (\(what) has tables this version does not know)")
                }
                if try !migrations.hasCompletedMigrations(db) {
                    throw ReplicaError(.noReplica, "\(what) (\(file.lastPathComponent)) is not made yet: the app's next open makes it")
                }
            }
            return database
        } catch let error as ReplicaError {
            throw error
        } catch let error as DatabaseError where isDamage(error) {
            throw ReplicaError(.damaged, "cannot read \(what) (\(file.lastPathComponent)): \(error)")
        } catch {
            throw ReplicaError(.storage, "cannot read \(what) (\(file.lastPathComponent)): \(error)")
        }
    }
}
