import ChordStoreRecords
@testable import ChordStoreEngine
import Foundation
import LMDB
import Testing

/// A store's part of a view database: its keys carry its id's four bytes, and its cursor
/// never strays into a neighbour's, at the byte boundaries of the ids included.
@Suite("Scoped transactions")
struct ScopedTransactionTests {
    @Test("first, last and seek stay within the store, next to ids that carry a byte and at the largest id")
    func cursorStaysInItsStore() throws {
        try withDatabase { env, db in
            let keys: [(UInt32, String)] = [(0, "x"), (0xFF, "a"), (0xFF, "b"), (0x100, "a"), (0x0100_0000, "m"), (UInt32.max, "z")]
            try env.withWriteTransaction { txn in
                for (store, key) in keys {
                    try ScopedTransaction(txn, store: store).put(db, key: Array(key.utf8), value: Array("\(store)".utf8))
                }
            }
            func text(_ bytes: UnsafeRawBufferPointer?) -> String? { bytes.map { String(decoding: $0, as: UTF8.self) } }
            try env.withReadTransaction { txn in
                func ends(_ store: UInt32) throws -> (first: String?, last: String?) {
                    try ScopedTransaction(txn, store: store).withCursor(db) { cursor in (text(try cursor.first()?.key), text(try cursor.last()?.key)) }
                }
                #expect(try ends(0) == ("x", "x"))
                #expect(try ends(0xFF) == ("a", "b"))
                #expect(try ends(0x100) == ("a", "a"))
                #expect(try ends(0xFFFF) == (nil, nil))
                #expect(try ends(0x00FF_FFFF) == (nil, nil))
                #expect(try ends(0x0100_0000) == ("m", "m"))
                #expect(try ends(UInt32.max) == ("z", "z"))
                let scoped = ScopedTransaction(txn, store: 0xFF)
                let (atB, pastB) = try scoped.withCursor(db) { cursor in
                    let atB = text(try Array("b".utf8).withUnsafeBytes { try cursor.seek(atLeast: $0) }?.key)
                    let pastB = text(try Array("c".utf8).withUnsafeBytes { try cursor.seek(atLeast: $0) }?.key)
                    return (atB, pastB)
                }
                #expect(atB == "b")
                #expect(pastB == nil)  // not store 0x100's "a"
                #expect(text(try scoped.get(db, key: Array("a".utf8))) == "255")
                #expect(try scoped.get(db, key: Array("x".utf8)) == nil)
                // The prefix is the id's four bytes, big-endian, before the key.
                #expect(text(try txn.get(db, key: [0, 0, 1, 0] + Array("a".utf8))) == "256")
            }
        }
    }

    @Test("update and upsert change a present key's value at the cursor, whatever its new size, and put an absent one; neighbours untouched")
    func updateAndUpsert() throws {
        try withDatabase { env, db in
            func text(_ bytes: UnsafeRawBufferPointer?) -> String? { bytes.map { String(decoding: $0, as: UTF8.self) } }
            var seen: [String?] = []
            try env.withWriteTransaction { txn in
                for store: UInt32 in [1, 2, 3] {
                    try ScopedTransaction(txn, store: store).put(db, key: Array("k".utf8), value: Array("v\(store)".utf8))
                }
                let scoped = ScopedTransaction(txn, store: 2)
                try scoped.update(db, key: Array("k".utf8)) { present in
                    seen.append(text(present))
                    return Array("a longer value".utf8)
                }
                try scoped.update(db, key: Array("new".utf8)) { present in
                    seen.append(text(present))
                    return Array("n".utf8)
                }
                for key in ["k", "fresh"] {
                    try scoped.upsert(
                        db, key: Array(key.utf8),
                        absent: { write in try Array("absent".utf8).withUnsafeBytes(write) },
                        present: { bytes, write in
                            seen.append(text(bytes))
                            try Array("was \(text(bytes)!)".utf8).withUnsafeBytes(write)
                        })
                }
            }
            #expect(seen == ["v2", nil, "a longer value"])
            let stored = try env.withReadTransaction { txn in
                try ["k", "new", "fresh"].map { key in
                    try [UInt32(1), 2, 3].map { store in text(try ScopedTransaction(txn, store: store).get(db, key: Array(key.utf8))) }
                }
            }
            #expect(stored == [["v1", "was a longer value", "v3"], [nil, "n", nil], [nil, "absent", nil]])
        }
    }

    /// An environment with one database, removed after `body`.
    private func withDatabase(_ body: (Environment, Database) throws -> Void) throws {
        let directory = temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let env = try Environment(directory: directory)
        defer {
            env.close()
            try? FileManager.default.removeItem(at: directory)
        }
        try body(env, try env.openDatabase("views"))
    }
}
