import Foundation
import Synchronization
import LMDB
import Testing

@Suite("LMDB wrapper")
struct EnvironmentTests {
    private func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("lmdb-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("values written in a committed transaction are read back; an aborted one leaves nothing")
    func putGetCommitAbort() throws {
        let env = try Environment(directory: try temporaryDirectory())
        let db = try env.openDatabase("kv")
        try env.withWriteTransaction { txn throws in try txn.put(db, key: [1], value: Array("one".utf8)) }
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try env.withWriteTransaction { txn throws in
                try txn.put(db, key: [2], value: Array("two".utf8))
                throw Boom()
            }
        }
        try env.withReadTransaction { txn throws in
            #expect(try txn.get(db, key: [1]).map { String(decoding: $0, as: UTF8.self) } == "one")
            #expect(try txn.get(db, key: [2]) == nil)
            #expect(try txn.stat(db).entries == 1)
        }
    }

    @Test("a map growth waits for a copy that nobody reads yet, and reads and writes do not wait behind it")
    func growthWaitsForCopy() throws {
        let env = try Environment(directory: try temporaryDirectory())
        let db = try env.openDatabase("kv")
        try env.withWriteTransaction { txn throws in
            for key in 0..<2_000 { try txn.put(db, key: withUnsafeBytes(of: UInt32(key).bigEndian) { Array($0) }, value: [UInt8](repeating: 7, count: 500)) }
        }
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        let copied = DispatchSemaphore(value: 0), grown = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            try? env.copy(to: writeEnd, compact: true)  // blocks: the pipe holds 64 KiB, the copy ~1 MiB
            close(writeEnd)
            copied.signal()
        }
        usleep(200_000)  // the copy has filled the pipe
        let before = env.mapSize
        Thread.detachNewThread {
            try? env.setMapSize(before * 2)
            grown.signal()
        }
        #expect(grown.wait(timeout: .now() + 0.5) == .timedOut, "the growth did not wait for the copy")
        // Meanwhile transactions go on: none waits behind the growth.
        let started = Date()
        try env.withReadTransaction { txn throws in #expect(try txn.stat(db).entries == 2_000) }
        try env.withWriteTransaction { txn throws in try txn.put(db, key: [0xFF], value: [1]) }
        #expect(Date().timeIntervalSince(started) < 5)
        // Read the copy out: it ends, then the growth takes place.
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var total = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            total += count
        }
        close(readEnd)
        #expect(copied.wait(timeout: .now() + 20) == .success)
        #expect(grown.wait(timeout: .now() + 20) == .success)
        #expect(total > 65_536 && env.mapSize == before * 2)
    }

    @Test("a cursor walks keys in memcmp order and seeks to the first key at least a bound")
    func cursorOrder() throws {
        let env = try Environment(directory: try temporaryDirectory())
        let db = try env.openDatabase("kv")
        try env.withWriteTransaction { txn throws in
            for key: UInt8 in [5, 1, 3] { try txn.put(db, key: [key], value: [key]) }
        }
        try env.withReadTransaction { txn throws in
            try txn.withCursor(db) { cursor throws in
                var keys: [UInt8] = []
                var entry = try cursor.first()
                while let e = entry { keys.append(e.key[0]); entry = try cursor.next() }
                #expect(keys == [1, 3, 5])
                let found = try [UInt8(2)].withUnsafeBytes { try cursor.seek(atLeast: $0) }
                #expect(found?.key[0] == 3)
                #expect(try cursor.last()?.key[0] == 5)
            }
        }
    }

    @Test("MDB_APPEND with a key out of order fails with MDB_KEYEXIST and LMDB's message")
    func appendOutOfOrder() throws {
        let env = try Environment(directory: try temporaryDirectory())
        let db = try env.openDatabase("log")
        do {
            try env.withWriteTransaction { txn throws in
                try txn.put(db, key: [2], value: [0], flags: .append)
                try txn.put(db, key: [1], value: [0], flags: .append)
            }
            Issue.record("an out-of-order append succeeded")
        } catch let error as LMDBError {
            #expect(error.isKeyExists)
            #expect(error.message.contains("MDB_KEYEXIST"))
            #expect(error.operation == "mdb_put(log)")
        }
    }

    @Test("a full map fails with MDB_MAP_FULL, and growing it lets the same write succeed")
    func mapFullThenGrow() throws {
        var options = Environment.Options()
        options.mapSize = 64 << 10
        let env = try Environment(directory: try temporaryDirectory(), options: options)
        let db = try env.openDatabase("big")
        let value = [UInt8](repeating: 7, count: 256 << 10)
        do {
            try env.withWriteTransaction { txn throws in try txn.put(db, key: [1], value: value) }
            Issue.record("a 256 KiB value fit in a 64 KiB map")
        } catch let error as LMDBError {
            #expect(error.isMapFull)
        }
        try env.setMapSize(4 << 20)
        #expect(env.mapSize == 4 << 20)
        try env.withWriteTransaction { txn throws in try txn.put(db, key: [1], value: value) }
        try env.withReadTransaction { txn throws in #expect(try txn.get(db, key: [1])?.count == value.count) }
    }

    @Test("read transactions are reset and renewed: each sees the latest commit, across map growths, and at most 16 wait between reads")
    func renewedReaders() throws {
        var options = Environment.Options()
        options.mapSize = 1 << 20
        let env = try Environment(directory: try temporaryDirectory(), options: options)
        let db = try env.openDatabase("kv")
        #expect(env.idleReaderCount == 0)
        for round in 0..<40 {
            try env.withWriteTransaction { txn throws in
                for key in 0..<50 {
                    try txn.put(db, key: withUnsafeBytes(of: UInt32(round * 50 + key).bigEndian) { Array($0) }, value: [UInt8](repeating: 1, count: 900))
                }
            }
            // A renewed transaction sees this commit, also after the map grew under it.
            #expect(try env.withReadTransaction { try $0.stat(db).entries } == (round + 1) * 50)
            #expect(env.idleReaderCount == 1)
            if round % 10 == 9 { try env.grow(by: 1 << 20) }
        }
        // Nested reads need transactions of their own; all come back, up to the limit.
        func nest(_ depth: Int) throws -> Int {
            try env.withReadTransaction { txn in
                let entries = try txn.stat(db).entries
                return depth == 0 ? entries : try nest(depth - 1)
            }
        }
        #expect(try nest(20) == 2_000)
        #expect(env.idleReaderCount == 16)
        // Readers on many threads at once share the idle ones.
        let counted = Mutex<[Int?]>([])
        DispatchQueue.concurrentPerform(iterations: 64) { _ in
            let entries = try? env.withReadTransaction { try $0.stat(db).entries }
            counted.withLock { $0.append(entries) }
        }
        #expect(counted.withLock { $0 } == [Int?](repeating: 2_000, count: 64))
        #expect(env.idleReaderCount <= 16)
        env.close()
        #expect(env.idleReaderCount == 0)
        #expect(throws: LMDBError.self) { try env.withReadTransaction { _ in 0 } }
    }

    @Test("a read transaction keeps its snapshot while a writer commits")
    func snapshotIsolation() throws {
        let env = try Environment(directory: try temporaryDirectory())
        let db = try env.openDatabase("kv")
        try env.withWriteTransaction { txn throws in try txn.put(db, key: [1], value: [1]) }
        try env.withReadTransaction { reader throws in
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                try? env.withWriteTransaction { txn throws in try txn.put(db, key: [1], value: [2]) }
                done.signal()
            }
            done.wait()
            #expect(try reader.get(db, key: [1])?.first == 1)
        }
        try env.withReadTransaction { txn throws in #expect(try txn.get(db, key: [1])?.first == 2) }
    }

    @Test("a lazy read transaction begins at its first use, sees the commits made before that, ends with the call, and lets the map grow after")
    func lazyReadTransaction() throws {
        var options = Environment.Options()
        options.mapSize = 1 << 20
        let env = try Environment(directory: try temporaryDirectory(), options: options)
        let db = try env.openDatabase("kv")
        try env.withWriteTransaction { txn throws in try txn.put(db, key: [1], value: [1]) }
        let before = env.readTransactionsBegun
        let unused = try env.withLazyReadTransaction { lazy in lazy.isBegun }
        #expect(!unused)
        #expect(env.readTransactionsBegun == before, "a lazy transaction never used begins none")
        let seen = try env.withLazyReadTransaction { lazy throws -> [UInt8?] in
            // A commit before the first use is seen; one after it is not.
            try env.withWriteTransaction { txn throws in try txn.put(db, key: [1], value: [2]) }
            let first = try lazy.transaction().get(db, key: [1])?.first
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                try? env.withWriteTransaction { txn throws in try txn.put(db, key: [1], value: [3]) }
                done.signal()
            }
            done.wait()
            let again = try lazy.transaction().get(db, key: [1])?.first
            return [first, again]
        }
        #expect(seen == [2, 2])
        // Kept past its call, it begins nothing (a shared lock nothing would release).
        let kept = try env.withLazyReadTransaction { $0 }
        #expect(throws: LMDBError.self) { try kept.transaction() }
        #expect(env.readTransactionsBegun == before + 1, "one transaction for both uses")
        // Ended with the call: its shared lock is released, so the map can grow.
        try env.grow(by: 1 << 20)
        try env.withReadTransaction { txn throws in #expect(try txn.get(db, key: [1])?.first == 3) }
        env.close()
        #expect(throws: LMDBError.self) { try env.withLazyReadTransaction { try $0.transaction() } }
    }

    @Test("emptying a database removes its keys and keeps it usable")
    func emptyDatabase() throws {
        let env = try Environment(directory: try temporaryDirectory())
        let db = try env.openDatabase("kv")
        try env.withWriteTransaction { txn throws in
            for key: UInt8 in 0..<10 { try txn.put(db, key: [key], value: [key]) }
            try txn.empty(db)
            try txn.put(db, key: [42], value: [1])
        }
        try env.withReadTransaction { txn throws in #expect(try txn.stat(db).entries == 1) }
    }
}
