import ChordStoreDomain
import Foundation

/// Byte layouts of the LMDB keys. Integers are big-endian so that memcmp order is numeric
/// order (and `MDB_APPEND` works on the log).
enum StoreKeys {
    /// A log key: the sequence number, 8 bytes big-endian.
    static func sequence(_ value: UInt64) -> [UInt8] { bigEndian(value) }

    /// Reads a log key (or any 8-byte big-endian number).
    static func sequence(_ key: UnsafeRawBufferPointer) throws(ChordStoreError) -> UInt64 {
        guard key.count == 8 else { throw ChordStoreError(.dataLoss, "a sequence key is \(key.count) bytes; they are 8") }
        return UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
    }

    /// A user-order key: the index, 4 bytes big-endian.
    static func index(_ value: Int) -> [UInt8] { bigEndian(UInt32(value)) }

    /// Reads a user-order value or key holding an index.
    static func index(_ bytes: UnsafeRawBufferPointer) throws(ChordStoreError) -> Int {
        guard bytes.count == 4 else { throw ChordStoreError(.dataLoss, "an index is \(bytes.count) bytes; they are 4") }
        return Int(UInt32(bigEndian: bytes.loadUnaligned(as: UInt32.self)))
    }

    /// An id key: the UUID's 16 bytes.
    static func id(_ id: UUID) -> [UInt8] {
        withUnsafeBytes(of: id.uuid) { Array($0) }
    }

    /// Reads a 16-byte id (the caller checks the length; shorter input is zero-padded).
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
    static func idInCreationKey(_ key: UnsafeRawBufferPointer) throws(ChordStoreError) -> UUID {
        guard key.count == 24 else { throw ChordStoreError(.dataLoss, "a creation key is \(key.count) bytes; they are 24") }
        return id(UnsafeRawBufferPointer(rebasing: key[8..<24]))
    }

    /// Reads a 16-byte id value, checking its length.
    static func checkedID(_ bytes: UnsafeRawBufferPointer) throws(ChordStoreError) -> UUID {
        guard bytes.count == 16 else { throw ChordStoreError(.dataLoss, "an id is \(bytes.count) bytes; they are 16") }
        return id(bytes)
    }

    /// A chord-location value: the chordset id and the position byte. The controls chord
    /// is stored as 16 zero bytes and position 0xFF.
    static func location(_ location: ChordLocation) -> [UInt8] {
        switch location {
        case .chordset(let id, let position): Self.id(id) + [UInt8(clamping: position)]
        case .controls: [UInt8](repeating: 0, count: 16) + [0xFF]
        }
    }

    /// Reads a chord-location value.
    static func location(_ bytes: UnsafeRawBufferPointer) -> ChordLocation? {
        guard bytes.count == 17 else { return nil }
        if bytes[16] == 0xFF { return .controls }
        return .chordset(id(bytes), position: Int(bytes[16]))
    }

    /// An id as two integers that compare like its bytes (memcmp order), for sorting.
    static func sortKey(_ id: UUID) -> (UInt64, UInt64) {
        withUnsafeBytes(of: id.uuid) { raw in
            (UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
             UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
    }

    private static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }
}
