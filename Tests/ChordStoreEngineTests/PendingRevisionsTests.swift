import ChordStoreDomain
import ChordStoreRecords
@testable import ChordStoreEngine
import Foundation
import LMDB
import Testing

/// The store-wide revisions a write transaction holds until its flush, and the appends
/// at a store's right edge: what the writer's views write, read back in the same
/// transaction and after it.
@Suite("Pending revisions and appends")
struct PendingRevisionsTests {
    @Test("a transaction's views see the collection revision it advanced, which reaches the database once, at the flush")
    func collectionRevisionHeldUntilFlush() throws {
        try withEnvironments { logEnv, viewsEnv, dbs in
            let chordset = UUID()
            try viewsEnv.withWriteTransaction { txn in
                try logEnv.withWriteTransaction { logTxn in
                    var space = LMDBStoreSpace(txn: txn, logTxn: logTxn, dbs: dbs, logHead: .empty)
                    let store = StoreRecord.initialDefault
                    let stored = { (key: RevisionKey) throws -> Revision? in
                        try ScopedTransaction(txn, store: 0).get(dbs.revisions, key: KeyBytes.revision(key)).map(StoreKeys.revision)
                    }
                    try space.withStore(store) { _, changes, _ in
                        try changes.advanceRevision(.collection, to: 1, by: "a")
                        try changes.advanceRevision(.chordset(chordset), to: 1, by: "a")
                    }
                    try space.withStore(store) { _, changes, _ in
                        try changes.advanceRevision(.collection, to: 2, by: "b")
                        let collection = try changes.revision(.collection)
                        #expect(collection == Revision(last: 2, lastSession: "b", lastByOther: 1))
                    }
                    // A chordset's revision is written at once; the collection's is held.
                    #expect(try stored(.chordset(chordset)) == Revision(last: 1, lastSession: "a", lastByOther: 0))
                    #expect(try stored(.collection) == nil)
                    let snapshot = try #require(try space.snapshot(of: store) as? LMDBStateView)
                    #expect(try snapshot.revision(.collection)?.last == 2)
                    try space.flush()
                    #expect(try stored(.collection) == Revision(last: 2, lastSession: "b", lastByOther: 1))
                }
            }
            // A reader's view, after the commit, reads the database.
            let committed = try viewsEnv.withReadTransaction { txn in
                try LMDBStateView(txn: txn, logTxn: nil, dbs: dbs, store: .initialDefault).revision(.collection)
            }
            #expect(committed?.last == 2)
        }
    }

    @Test("a store deleted in the transaction leaves no revision behind at the flush")
    func deletedStoreForgotten() throws {
        try withEnvironments { logEnv, viewsEnv, dbs in
            try viewsEnv.withWriteTransaction { txn in
                try logEnv.withWriteTransaction { logTxn in
                    var space = LMDBStoreSpace(txn: txn, logTxn: logTxn, dbs: dbs, logHead: .empty)
                    let store = StoreRecord(id: 7, name: "seven", created: Instant(microsecondsSince1970: 0), createdAt: 1)
                    try space.save(store)
                    try space.withStore(store) { _, changes, _ in try changes.advanceRevision(.collection, to: 1, by: "a") }
                    try space.remove(store)
                    try space.flush()
                    #expect(try ScopedTransaction(txn, store: 7).get(dbs.revisions, key: KeyBytes.revision(.collection)) == nil)
                }
            }
        }
    }

    @Test("an append at a store's end that is not the database's last key is put in its place, its neighbours untouched")
    func appendFallsBack() throws {
        try withEnvironments { _, viewsEnv, dbs in
            let db = dbs.storeLog
            func put(_ store: UInt32, _ key: String, _ value: String? = nil, last: Bool) throws {
                try viewsEnv.withWriteTransaction { txn in
                    try ScopedTransaction(txn, store: store, isLastStore: last)
                        .putAtEnd(db, key: Array(key.utf8), value: Array((value ?? key).utf8))
                }
            }
            try put(2, "m", last: true)
            try put(2, "z", last: true)
            try put(2, "c", last: true)  // before "z": not an append
            try put(1, "q", last: true)  // wrongly thought last: store 2 has keys after it
            try put(1, "b", last: false)
            try put(2, "zz", last: true)  // an append
            try put(2, "zz", "again", last: true)  // the last key again: the append is refused, the value replaced
            let (first, second) = try viewsEnv.withReadTransaction { txn in
                func keys(_ store: UInt32) throws -> [String] {
                    try ScopedTransaction(txn, store: store).withCursor(db) { cursor in
                        var result: [String] = []
                        var entry = try cursor.first()
                        while let current = entry {
                            result.append(String(decoding: current.key, as: UTF8.self))
                            entry = try cursor.next()
                        }
                        return result
                    }
                }
                return (try keys(1), try keys(2))
            }
            #expect(first == ["b", "q"])
            #expect(second == ["c", "m", "z", "zz"])
            let replaced = try viewsEnv.withReadTransaction { txn in
                try ScopedTransaction(txn, store: 2).get(db, key: Array("zz".utf8)).map { String(decoding: $0, as: UTF8.self) }
            }
            #expect(replaced == "again")
        }
    }

    private func withEnvironments(_ body: (Environment, Environment, StoreDatabases) throws -> Void) throws {
        let directory = temporaryDirectory()
        let viewsDirectory = directory.appendingPathComponent("views")
        try FileManager.default.createDirectory(at: viewsDirectory, withIntermediateDirectories: true)
        var options = Environment.Options()
        options.maxDatabases = 32
        let logEnv = try Environment(directory: directory, options: options)
        let viewsEnv = try Environment(directory: viewsDirectory, options: options)
        defer {
            logEnv.close()
            viewsEnv.close()
            try? FileManager.default.removeItem(at: directory)
        }
        try body(logEnv, viewsEnv, try StoreDatabases(log: logEnv, views: viewsEnv))
    }
}
