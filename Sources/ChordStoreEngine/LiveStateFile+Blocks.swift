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
    /// its hash chained to the block's before it.
    struct BlockWriter {
        let fd: Int32
        let path: String
        private var block: [UInt8] = []
        private var previousHash: UInt64 = 0

        init(fd: Int32, path: String) {
            (self.fd, self.path) = (fd, path)
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
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { throw DurableFile.failure("write", path, code: written < 0 ? errno : EIO) }
                offset += written
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

    /// Reads a frame's fields.
    struct Cursor {
        private let bytes: UnsafeRawBufferPointer
        private var offset = 0

        init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        var atEnd: Bool { offset >= bytes.count }

        mutating func byte() throws(ChordStoreError) -> UInt8 {
            guard offset < bytes.count else { throw Self.short }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func varint() throws(ChordStoreError) -> UInt64 {
            var value: UInt64 = 0
            for shift in stride(from: UInt64(0), to: 64, by: 7) {
                let byte = try byte()
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return value }
            }
            throw ChordStoreError(.dataLoss, "the live state file has a varint longer than 64 bits")
        }

        mutating func take(_ count: Int) throws(ChordStoreError) -> UnsafeRawBufferPointer {
            guard count >= 0, count <= bytes.count - offset else { throw Self.short }
            defer { offset += count }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
        }

        mutating func rest() throws(ChordStoreError) -> UnsafeRawBufferPointer { try take(bytes.count - offset) }

        mutating func lengthDelimited() throws(ChordStoreError) -> UnsafeRawBufferPointer { try take(Int(clamping: try varint())) }

        mutating func string() throws(ChordStoreError) -> String {
            String(decoding: try lengthDelimited(), as: UTF8.self)
        }

        mutating func id() throws(ChordStoreError) -> UUID {
            let raw = try take(16)
            var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: raw) }
            return UUID(uuid: uuid)
        }

        private static let short = ChordStoreError(.dataLoss, "the live state file has a frame shorter than its fields")
    }
}
