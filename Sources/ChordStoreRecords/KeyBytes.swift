package import ChordStoreDomain
package import Foundation

/// A key or value of at most 40 bytes held inline, without a heap allocation: the fixed
/// layouts of ``StoreKeys`` (ids, sequence numbers, indexes, creation keys, a chordset's
/// history key, revision keys), and the engine's fixed records of numbers, as the views'
/// hot paths hand them to LMDB. A commit of one add passes a few dozen of them; as
/// `[UInt8]` each was an allocation and a release. ``StoreKeys``' array forms of these
/// layouts are built from them.
package struct KeyBytes: ContiguousBytes, Sendable {
    /// The bytes, the key's first (read them through ``count``).
    package private(set) var storage: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
    /// How many of the 40 bytes are the key's.
    package private(set) var count = 0

    /// The most bytes a key holds inline.
    package static let capacity = 40

    /// No bytes.
    @inlinable package init() {}

    /// Appends `value`'s 8 bytes, big-endian.
    @inlinable package mutating func append(bigEndian value: UInt64) {
        let offset = count
        precondition(offset + 8 <= Self.capacity, "a key of more than \(Self.capacity) bytes")
        withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt64.self) }
        count += 8
    }

    /// Appends `value`'s 4 bytes, big-endian.
    @inlinable package mutating func append(bigEndian value: UInt32) {
        let offset = count
        precondition(offset + 4 <= Self.capacity, "a key of more than \(Self.capacity) bytes")
        withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt32.self) }
        count += 4
    }

    /// Appends one byte.
    @inlinable package mutating func append(_ byte: UInt8) {
        let offset = count
        precondition(offset + 1 <= Self.capacity, "a key of more than \(Self.capacity) bytes")
        withUnsafeMutableBytes(of: &storage) { $0[offset] = byte }
        count += 1
    }

    /// Appends the id's 16 bytes.
    @inlinable package mutating func append(_ id: UUID) {
        let offset = count
        precondition(offset + 16 <= Self.capacity, "a key of more than \(Self.capacity) bytes")
        withUnsafeMutableBytes(of: &storage) { storage in
            Swift.withUnsafeBytes(of: id.uuid) { storage.baseAddress!.advanced(by: offset).copyMemory(from: $0.baseAddress!, byteCount: 16) }
        }
        count += 16
    }

    /// Calls `body` with the bytes. (The engine reads them through `storage` instead: a
    /// call of this generic method from another module was left unspecialized.)
    @inlinable package func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let count = count
        return try Swift.withUnsafeBytes(of: storage) { try body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }

    /// The bytes as an array (for the callers that keep or concatenate them).
    package var array: [UInt8] { withUnsafeBytes { Array($0) } }

    // MARK: The layouts

    /// An id: its 16 bytes.
    @inlinable package static func id(_ id: UUID) -> KeyBytes {
        var key = KeyBytes()
        key.append(id)
        return key
    }

    /// A sequence number (a log or store key): 8 bytes big-endian.
    @inlinable package static func sequence(_ value: UInt64) -> KeyBytes {
        var key = KeyBytes()
        key.append(bigEndian: value)
        return key
    }

    /// A user-order index: 4 bytes big-endian.
    @inlinable package static func index(_ value: Int) -> KeyBytes {
        var key = KeyBytes()
        key.append(bigEndian: UInt32(value))
        return key
    }

    /// A creation-index key: the creation time in microseconds with the sign bit flipped
    /// (negative times sort first), 8 bytes big-endian, then the id.
    @inlinable package static func creation(_ date: Instant, _ id: UUID) -> KeyBytes {
        var key = KeyBytes()
        key.append(bigEndian: UInt64(bitPattern: date.microsecondsSince1970) ^ (1 << 63))
        key.append(id)
        return key
    }

    /// A chordset-history key: the chordset's id, then the sequence number.
    @inlinable package static func history(_ chordset: UUID, _ sequence: UInt64) -> KeyBytes {
        var key = KeyBytes()
        key.append(chordset)
        key.append(bigEndian: sequence)
        return key
    }

    /// A revision key: 0 and the chordset's id, or one byte for the controls chord (1),
    /// the collection (2) and delete-all (3).
    @inlinable package static func revision(_ revisionKey: RevisionKey) -> KeyBytes {
        var key = KeyBytes()
        switch revisionKey {
        case .chordset(let id):
            key.append(0)
            key.append(id)
        case .controls: key.append(1)
        case .collection: key.append(2)
        case .bulk: key.append(3)
        }
        return key
    }
}
