import ChordStoreDomain
import Foundation

/// Byte layouts of the LMDB keys. Integers are big-endian so that memcmp order is numeric
/// order (and `MDB_APPEND` works on the log).
enum StoreKeys {
    /// A log key: the sequence number, 8 bytes big-endian.
    static func sequence(_ value: UInt64) -> [UInt8] { bigEndian(value) }

    /// Reads a log key.
    static func sequence(_ key: UnsafeRawBufferPointer) -> UInt64 {
        UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
    }

    /// A user-order key: the index, 4 bytes big-endian.
    static func index(_ value: Int) -> [UInt8] { bigEndian(UInt32(value)) }

    /// Reads a user-order value or key holding an index.
    static func index(_ bytes: UnsafeRawBufferPointer) -> Int {
        Int(UInt32(bigEndian: bytes.loadUnaligned(as: UInt32.self)))
    }

    /// An id key: the UUID's 16 bytes.
    static func id(_ id: UUID) -> [UInt8] {
        withUnsafeBytes(of: id.uuid) { Array($0) }
    }

    /// Reads a 16-byte id.
    static func id(_ bytes: UnsafeRawBufferPointer) -> UUID {
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes.prefix(16))) }
        return UUID(uuid: value)
    }

    /// A creation-index key: the creation time (microseconds, sign bit flipped so that
    /// negative times sort first), 8 bytes big-endian, then the id.
    static func creation(_ date: Instant, _ id: UUID) -> [UInt8] {
        bigEndian(UInt64(bitPattern: date.microsecondsSince1970) ^ (1 << 63)) + Self.id(id)
    }

    /// The id inside a creation-index key.
    static func idInCreationKey(_ key: UnsafeRawBufferPointer) -> UUID {
        id(UnsafeRawBufferPointer(rebasing: key[8..<24]))
    }

    /// A chord-location value: the chordset id and the position byte. The controls chord
    /// is stored as 16 zero bytes and position 0xFF.
    static func location(_ location: ChordLocation) -> [UInt8] {
        switch location {
        case .chordset(let id, let position): Self.id(id) + [UInt8(position)]
        case .controls: [UInt8](repeating: 0, count: 16) + [0xFF]
        }
    }

    /// Reads a chord-location value.
    static func location(_ bytes: UnsafeRawBufferPointer) -> ChordLocation? {
        guard bytes.count == 17 else { return nil }
        if bytes[16] == 0xFF { return .controls }
        return .chordset(id(bytes), position: Int(bytes[16]))
    }

    private static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }
}
