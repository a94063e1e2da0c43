import Foundation
import LMDB
import Testing

@Suite("LMDB pinned commits and roll-backs")
struct PinnedCommitTests {
    private func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("lmdb-held-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    private static func key(_ n: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(n).bigEndian) { Array($0) } }

    /// Every key and value of `db`.
    private static func contents(_ env: Environment, _ db: Database) throws -> [[UInt8]: [UInt8]] {
        try env.withReadTransaction { txn in
            var all: [[UInt8]: [UInt8]] = [:]
            try txn.withCursor(db) { cursor in
                var entry = try cursor.first()
                while let current = entry {
                    all[Array(current.key)] = Array(current.value)
                    entry = try cursor.next()
                }
            }
            return all
        }
    }

    @Test(
        "a pinned commit's pages outlive later commits (writes, deletes, a map growth), and rolling back to its meta page makes the environment that state again, whatever followed it on disk",
        arguments: [false, true])
    func rollBackToHeld(writeMap: Bool) throws {
        let directory = try temporaryDirectory()
        var options = Environment.Options()
        options.noSync = true
        options.writeMap = writeMap
        options.mapSize = 1 << 26
        var env = try Environment(directory: directory, options: options)
        var db = try env.openDatabase("kv")
        try env.withWriteTransaction { txn in
            for n in 0..<2_000 { try txn.put(db, key: Self.key(n), value: [UInt8](repeating: UInt8(n % 251), count: 100)) }
        }
        let expected = try Self.contents(env, db)
        let (pinned, count) = try env.pinLastCommit { txn in try txn.stat(db).entries }
        #expect(count == 2_000)
        try env.sync()
        // Commits after it: every value rewritten, half the keys deleted, new ones, one
        // at a time (each commit frees the pages of the last, which an unheld state would
        // see reused), and a growth of the map in between.
        for round in 0..<20 {
            try env.withWriteTransaction { txn in
                for n in stride(from: round, to: 2_000, by: 20) {
                    if n % 2 == 0 { _ = try txn.delete(db, key: Self.key(n)) } else { try txn.put(db, key: Self.key(n), value: [UInt8](repeating: 0xEE, count: 120)) }
                }
                try txn.put(db, key: Self.key(10_000 + round), value: [1, 2, 3])
            }
            if round == 10 { try env.grow(by: 1 << 20) }
        }
        #expect(try Self.contents(env, db) != expected)
        let meta = pinned.meta
        pinned.release()
        env.close()
        // What the crash could leave of the pages written since: garbage everywhere past
        // the held state's last page.
        let file = directory.appendingPathComponent("data.mdb")
        let handle = try FileHandle(forWritingTo: file)
        let end = try handle.seekToEnd()
        let start = (meta.lastPage + 1) * UInt64(meta.pageSize)
        if end > start {
            try handle.seek(toOffset: start)
            handle.write(Data(repeating: 0xA5, count: Int(end - start)))
        }
        try handle.close()
        try FileManager.default.removeItem(at: directory.appendingPathComponent("lock.mdb"))

        try Environment.rollBack(directory: directory, to: meta)
        env = try Environment(directory: directory, options: options)
        db = try env.openDatabase("kv")
        #expect(try Self.contents(env, db) == expected)
        // And it takes commits again.
        try env.withWriteTransaction { txn in try txn.put(db, key: Self.key(99_999), value: [9]) }
        #expect(try Self.contents(env, db).count == expected.count + 1)
        env.close()
    }

    @Test("a roll-back refuses a data file too short for the state, and leaves it as it was")
    func rollBackRefusesShortFile() throws {
        let directory = try temporaryDirectory()
        var options = Environment.Options()
        options.noSync = true
        let env = try Environment(directory: directory, options: options)
        let db = try env.openDatabase("kv")
        try env.withWriteTransaction { txn in
            for n in 0..<500 { try txn.put(db, key: Self.key(n), value: [UInt8](repeating: 1, count: 200)) }
        }
        let (pinned, _) = try env.pinLastCommit { _ in () }
        let meta = pinned.meta
        pinned.release()
        env.close()
        let file = directory.appendingPathComponent("data.mdb")
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: UInt64(meta.pageSize) * 4)
        try handle.close()
        let before = try Data(contentsOf: file)
        #expect(throws: LMDBError.self) { try Environment.rollBack(directory: directory, to: meta) }
        #expect(try Data(contentsOf: file) == before)
    }

    @Test("a commit pinned when its environment closes is unpinned without touching it")
    func releaseAfterClose() throws {
        let env = try Environment(directory: try temporaryDirectory())
        let db = try env.openDatabase("kv")
        try env.withWriteTransaction { txn in try txn.put(db, key: [1], value: [1]) }
        let (pinned, _) = try env.pinLastCommit { _ in () }
        #expect(pinned.meta.transactionID >= 2)
        env.close()
        pinned.release()
    }
}
