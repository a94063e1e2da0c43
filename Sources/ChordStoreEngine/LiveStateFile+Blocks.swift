import ChordStoreDomain
import ChordStoreRecords
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension LiveStateFile {
    /// A frame's bytes as they are built.
    struct FrameBytes {
        var bytes: [UInt8] = []

        mutating func varint(_ value: UInt64) {
            var v = value
            while v >= 0x80 {
                bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
                v >>= 7
            }
            bytes.append(UInt8(v))
        }

        mutating func string(_ value: String) {
            varint(UInt64(value.utf8.count))
            bytes.append(contentsOf: value.utf8)
        }

        mutating func id(_ id: UUID) { withUnsafeBytes(of: id.uuid) { bytes.append(contentsOf: $0) } }
    }

    /// Gathers frames into blocks of about ``blockSize`` bytes and writes each whole,
    /// its hash chained to the block's before it, to a new file front to back.
    struct BlockWriter {
        let file: SequentialFileWriter
        private var block: [UInt8] = []
        private var previousHash: UInt64 = 0

        init(file: SequentialFileWriter) {
            self.file = file
            block.reserveCapacity(LiveStateFile.blockSize + 4_096)
        }

        /// Appends `frame` as a frame of `kind` and empties it (its storage kept).
        mutating func frame(_ kind: Kind, _ frame: inout FrameBytes) throws(ChordStoreError) {
            var header = FrameBytes()
            header.bytes.append(kind.rawValue)
            header.varint(UInt64(frame.bytes.count))
            let size = header.bytes.count + frame.bytes.count
            // Every frame is far smaller (``frameItems``): this guards the format's bound.
            guard size <= LiveStateFile.maxBlock else {
                throw ChordStoreError(.internal, "a live state frame of \(size) bytes is over the format's \(LiveStateFile.maxBlock)")
            }
            if !block.isEmpty, block.count + size > LiveStateFile.blockSize { try flush() }
            block.append(contentsOf: header.bytes)
            block.append(contentsOf: frame.bytes)
            frame.bytes.removeAll(keepingCapacity: true)
        }

        mutating func finish() throws(ChordStoreError) {
            if !block.isEmpty { try flush() }
        }

        private mutating func flush() throws(ChordStoreError) {
            let hash = XXHash64.hash(block, seed: previousHash)
            var header: [UInt8] = []
            withUnsafeBytes(of: UInt32(block.count).littleEndian) { header.append(contentsOf: $0) }
            withUnsafeBytes(of: hash.littleEndian) { header.append(contentsOf: $0) }
            try writeRaw(header)
            try writeRaw(block)
            previousHash = hash
            block.removeAll(keepingCapacity: true)
        }

        func writeRaw(_ bytes: [UInt8]) throws(ChordStoreError) {
            do {
                try bytes.withUnsafeBytes { try file.append($0) }
            } catch {
                throw ChordStoreError.wrapping(error)
            }
        }
    }

    /// Reads blocks back, each checked against its chained hash.
    struct BlockReader {
        let fd: Int32
        let path: String
        private var previousHash: UInt64 = 0

        init(fd: Int32, path: String) { (self.fd, self.path) = (fd, path) }

        /// Exactly `count` bytes, or fewer at the file's end.
        func readRaw(_ count: Int) throws(ChordStoreError) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: count)
            var filled = 0
            while filled < count {
                let got = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + filled, count - filled) }
                if got < 0, errno == EINTR { continue }
                guard got >= 0 else { throw DurableFile.failure("read", path) }
                if got == 0 { break }
                filled += got
            }
            if filled < count { bytes.removeLast(count - filled) }
            return bytes
        }

        /// The next block's bytes; `nil` at the file's end.
        mutating func nextBlock() throws(ChordStoreError) -> [UInt8]? {
            let header = try readRaw(12)
            if header.isEmpty { return nil }
            guard header.count == 12 else { throw ChordStoreError(.dataLoss, "\(path) ends inside a block's header") }
            let count = Int(UInt32(littleEndian: header.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }))
            let hash = UInt64(littleEndian: header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 4, as: UInt64.self) })
            guard count > 0, count <= LiveStateFile.maxBlock else { throw ChordStoreError(.dataLoss, "\(path) has a block of \(count) bytes") }
            let block = try readRaw(count)
            guard block.count == count else { throw ChordStoreError(.dataLoss, "\(path) ends inside a block") }
            guard XXHash64.hash(block, seed: previousHash) == hash else {
                throw ChordStoreError(.dataLoss, "\(path) has a damaged block (its hash differs), or one out of place")
            }
            previousHash = hash
            return block
        }
    }
}
