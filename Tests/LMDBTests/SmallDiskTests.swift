import Foundation
import LMDB
import TestSupport
import Testing

/// A writable map (`MDB_WRITEMAP`) on a disk too small for it: every page of the map must
/// have a block behind it, or a write through it kills the process with SIGBUS.
@Suite("LMDB on a small disk", .serialized, .enabled(if: ScratchFilesystem.isAvailable, "mounting a tmpfs needs root"))
struct SmallDiskTests {
    private func writeMapOptions(_ bytes: Int) -> Environment.Options {
        var options = Environment.Options()
        options.mapSize = bytes
        options.writeMap = true
        options.noSync = true
        return options
    }

    @Test("a writable map larger than the disk opens smaller, closed once when it cannot open at all")
    func opensSmaller() throws {
        let disk = try ScratchFilesystem(megabytes: 6)
        defer { disk.unmount() }
        let env = try Environment(directory: disk.directory, options: writeMapOptions(64 << 20))
        #expect(env.mapSize <= 6 << 20, "the map kept a size the disk cannot hold: \(env.mapSize)")
        #expect(env.mapSize >= 1 << 20)
        let db = try env.openDatabase("kv")
        try env.withWriteTransaction { txn throws in try txn.put(db, key: [1], value: [1]) }
        env.close()
        // A disk with room for LMDB's first pages but less than the smallest map: the
        // environment opens, reserving its blocks fails, and the open fails, closing the
        // environment once (it once closed it twice, a double free); then, with room,
        // the same directory opens.
        let full = try disk.ballast("ballast", bytes: disk.freeBytes - (256 << 10))
        let other = disk.directory.appendingPathComponent("other")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        let refused = #expect(throws: LMDBError.self) { try Environment(directory: other, options: writeMapOptions(64 << 20)) }
        #expect(refused?.isDiskFull == true)
        #expect(refused?.operation.hasPrefix("posix_fallocate") == true, "it failed before reserving: \(String(describing: refused))")
        try FileManager.default.removeItem(at: full)
        _ = try Environment(directory: other, options: writeMapOptions(2 << 20))
    }

    @Test("a growth the disk cannot hold fails with ENOSPC, leaves the map as it was, and writes go on")
    func growthUndone() throws {
        let disk = try ScratchFilesystem(megabytes: 16)
        defer { disk.unmount() }
        let env = try Environment(directory: disk.directory, options: writeMapOptions(2 << 20))
        let db = try env.openDatabase("kv")
        let before = env.mapSize
        do {
            try env.setMapSize(64 << 20)
            Issue.record("a 64 MiB map was reserved on a 16 MiB disk")
        } catch {
            #expect(error.isDiskFull)
        }
        #expect(env.mapSize == before)
        // Fill the map it has: MDB_MAP_FULL, never SIGBUS; `grow` takes what the disk holds.
        var key: UInt32 = 0
        let value = [UInt8](repeating: 1, count: 4_000)
        func fill() throws {
            while true {
                try env.withWriteTransaction { txn throws in
                    for _ in 0..<16 {
                        key += 1
                        try txn.put(db, key: withUnsafeBytes(of: key.bigEndian) { Array($0) }, value: value)
                    }
                }
            }
        }
        #expect(throws: LMDBError.self) { try fill() }
        try env.grow(by: 64 << 20)
        #expect(env.mapSize > before)
        #expect(env.mapSize < 16 << 20)
        try env.withWriteTransaction { txn throws in try txn.put(db, key: [0xFF], value: value) }
    }
}
