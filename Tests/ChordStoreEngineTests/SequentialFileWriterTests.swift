import ChordStoreDomain
@testable import ChordStoreEngine
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import TestSupport

/// The writer of a backup's and a bootstrap's files: what goes in comes out, however it
/// is cut, whether the writes bypass the page cache or not, and a full disk is reported.
@Suite("Sequential file writer")
struct SequentialFileWriterTests {
    /// Bytes that differ at every offset (a repeated pattern would hide a misplaced block).
    static func bytes(_ count: Int) -> [UInt8] {
        var generator = SplitMix64(seed: UInt64(count))
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { buffer in
            for start in stride(from: 0, to: count, by: 8) {
                withUnsafeBytes(of: generator.next()) { word in
                    UnsafeMutableRawBufferPointer(rebasing: buffer[start..<min(start + 8, count)])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: word[..<min(8, count - start)]))
                }
            }
        }
        return bytes
    }

    /// Writes `data` to a new file in `directory` in pieces of the sizes in `cuts` (taken
    /// in turn), and returns what the file holds.
    static func roundTrip(_ data: [UInt8], cuts: [Int], in directory: URL, bypass: Bool) throws -> (written: [UInt8], direct: Bool) {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("file").path
        let writer = try SequentialFileWriter(creating: path, bypassCache: bypass)
        let direct = writer.direct
        var offset = 0, turn = 0
        while offset < data.count {
            let count = min(cuts[turn % cuts.count], data.count - offset)
            try data[offset..<(offset + count)].withUnsafeBytes { try writer.append($0) }
            offset += count
            turn += 1
        }
        try writer.finish()
        return (Array(try Data(contentsOf: URL(fileURLWithPath: path))), direct)
    }

    /// Whether files in `directory` can be opened with `O_DIRECT`.
    static func takesDirect(_ directory: URL) -> Bool {
        let path = directory.appendingPathComponent("probe").path
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | __O_DIRECT, 0o600)
        defer { unlink(path) }
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }

    @Test("bytes appended in pieces of any size come back whole, through several direct buffers and an unaligned tail",
          arguments: [[1, 4_095, 1 << 20, 7], [SequentialFileWriter.bufferSize], [3 << 20, 5 << 20]])
    func roundTrips(cuts: [Int]) async throws {
        try await onOwnThread {
            let directory = temporaryDirectory()
            // More full buffers than writes in flight: each lands at its own offset.
            let data = Self.bytes(5 * SequentialFileWriter.bufferSize + 3 * SequentialFileWriter.alignment + 517)
            let (written, direct) = try Self.roundTrip(data, cuts: cuts, in: directory, bypass: true)
            #expect(written == data)
            // Past the page cache wherever the filesystem allows it.
            #expect(direct == Self.takesDirect(directory))
        }
    }

    @Test("an aligned file and an empty one come back whole")
    func alignedAndEmpty() throws {
        let aligned = Self.bytes(SequentialFileWriter.bufferSize + SequentialFileWriter.alignment)
        #expect(try Self.roundTrip(aligned, cuts: [65_536], in: temporaryDirectory(), bypass: true).written == aligned)
        #expect(try Self.roundTrip([], cuts: [1], in: temporaryDirectory(), bypass: true).written == [])
    }

    @Test("with the page cache (bypassCache: false) the bytes come back whole too")
    func buffered() throws {
        let data = Self.bytes(SequentialFileWriter.bufferSize + 12_345)
        let (written, direct) = try Self.roundTrip(data, cuts: [100_000], in: temporaryDirectory(), bypass: false)
        #expect(!direct)
        #expect(written == data)
    }

    @Test("a file that exists already is not overwritten")
    func refusesExisting() throws {
        let directory = temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("file").path
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path))
        #expect(throws: ChordStoreError.self) { try SequentialFileWriter(creating: path) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data([1, 2, 3]))
    }

    @Test("a disk that fills during the writes is reported as RESOURCE_EXHAUSTED, naming the file",
          .enabled(if: ScratchFilesystem.isAvailable, "mounting a tmpfs needs root"))
    func fullDisk() throws {
        let disk = try ScratchFilesystem(megabytes: 4)
        defer { disk.unmount() }
        let path = disk.directory.appendingPathComponent("file").path
        let writer = try SequentialFileWriter(creating: path)
        let piece = Self.bytes(1 << 20)
        let error = #expect(throws: ChordStoreError.self) {
            for _ in 0..<12 { try piece.withUnsafeBytes { try writer.append($0) } }
            try writer.finish()
        }
        #expect(error?.code == .resourceExhausted)
        #expect(error?.message.contains(path) == true)
    }

    @Test("a direct write that fails on the queue, with another in flight, is reported by the next call, and the writer ends cleanly",
          .enabled(if: ScratchFilesystem.ext4IsAvailable, "an ext4 image on a loop device needs root, mkfs.ext4 and a loop device"))
    func fullDiskWithWritesInFlight() throws {
        let disk = try ScratchFilesystem(ext4Megabytes: 16)
        defer { disk.unmount() }
        let path = disk.directory.appendingPathComponent("file").path
        let piece = Self.bytes(SequentialFileWriter.bufferSize)
        var handedOff = 0
        let error = try {
            let writer = try SequentialFileWriter(creating: path)
            #expect(writer.direct, "ext4 takes O_DIRECT writes")
            // Twice the disk in full buffers: each append hands one to the queue, so the
            // writes that fill the disk run two at a time, and one fails there.
            return #expect(throws: ChordStoreError.self) {
                for _ in 0..<8 {
                    try piece.withUnsafeBytes { try writer.append($0) }
                    handedOff += 1
                }
                try writer.finish()
            }
        }()
        #expect(error?.code == .resourceExhausted, "\(String(describing: error))")
        #expect(error?.message.contains(path) == true)
        // The failure was the queue's, seen by a later append or by finish: the first
        // appends only handed buffers on.
        #expect(handedOff >= 2)
    }
}
