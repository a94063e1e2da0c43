package import ChordStoreDomain
package import Foundation

/// Byte layouts of the LMDB keys. Integers are big-endian so that memcmp order is numeric
/// order (and `MDB_APPEND` works on the log).
package enum StoreKeys {
    /// A log key: the sequence number, 8 bytes big-endian.
    package static func sequence(_ value: UInt64) -> [UInt8] { KeyBytes.sequence(value).array }

    /// Reads a log key (or any 8-byte big-endian number).
    package static func sequence(_ key: UnsafeRawBufferPointer) throws(ChordStoreError) -> UInt64 {
        guard key.count == 8 else { throw ChordStoreError(.dataLoss, "a sequence key is \(key.count) bytes; they are 8") }
        return UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
    }

    /// A user-order key: the index, 4 bytes big-endian.
    package static func index(_ value: Int) -> [UInt8] { KeyBytes.index(value).array }

    /// Reads a user-order value or key holding an index.
    package static func index(_ bytes: UnsafeRawBufferPointer) throws(ChordStoreError) -> Int {
        guard bytes.count == 4 else { throw ChordStoreError(.dataLoss, "an index is \(bytes.count) bytes; they are 4") }
        return Int(UInt32(bigEndian: bytes.loadUnaligned(as: UInt32.self)))
    }

    /// An id key: the UUID's 16 bytes.
    package static func id(_ id: UUID) -> [UInt8] { KeyBytes.id(id).array }

    /// Reads a 16-byte id (the caller checks the length; shorter input is zero-padded).
    package static func id(_ bytes: UnsafeRawBufferPointer) -> UUID {
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes.prefix(16))) }
        return UUID(uuid: value)
    }

    /// A creation-index key: the creation time (microseconds, sign bit flipped so that
    /// negative times sort first), 8 bytes big-endian, then the id.
    package static func creation(_ date: Instant, _ id: UUID) -> [UInt8] { KeyBytes.creation(date, id).array }

    /// A title-index key: the folded title's UTF-8 bytes, a zero byte (titles hold no
    /// control characters), then the creation key; so titles sort by their folded form,
    /// then by creation.
    package static func title(_ chordset: Chordset) -> [UInt8] {
        title(chordset.title, chordset.creationDate, chordset.id)
    }

    /// ``title(_:)`` from the fields it reads.
    package static func title(_ title: String, _ creationDate: Instant, _ id: UUID) -> [UInt8] {
        var key = titlePart(TitleKey.bytes(title))
        key.reserveCapacity(key.count + 25)
        key.append(0)
        KeyBytes.creation(creationDate, id).withUnsafeBytes { key.append(contentsOf: $0) }
        return key
    }

    /// Most bytes of a folded title a title key holds (LMDB keys are at most 511 bytes;
    /// titles may fold to more). Titles that share their first 400 folded bytes sort by
    /// creation.
    package static let maxTitleKeyPart = 400

    /// The folded title cut to ``maxTitleKeyPart`` bytes on a UTF-8 character boundary.
    package static func titlePart(_ folded: [UInt8]) -> [UInt8] {
        guard folded.count > maxTitleKeyPart else { return folded }
        var end = maxTitleKeyPart
        while end > 0, folded[end] & 0xC0 == 0x80 { end -= 1 }  // not inside a character
        return Array(folded[..<end])
    }

    /// The id at the end of a title-index key.
    package static func idInTitleKey(_ key: UnsafeRawBufferPointer) throws(ChordStoreError) -> UUID {
        guard key.count >= 25 else { throw ChordStoreError(.dataLoss, "a title key is \(key.count) bytes; at least 25") }
        return id(UnsafeRawBufferPointer(rebasing: key[(key.count - 16)...]))
    }

    /// The id inside a creation-index key.
    package static func idInCreationKey(_ key: UnsafeRawBufferPointer) throws(ChordStoreError) -> UUID {
        guard key.count == 24 else { throw ChordStoreError(.dataLoss, "a creation key is \(key.count) bytes; they are 24") }
        return id(UnsafeRawBufferPointer(rebasing: key[8..<24]))
    }

    /// Reads a 16-byte id value, checking its length.
    package static func checkedID(_ bytes: UnsafeRawBufferPointer) throws(ChordStoreError) -> UUID {
        guard bytes.count == 16 else { throw ChordStoreError(.dataLoss, "an id is \(bytes.count) bytes; they are 16") }
        return id(bytes)
    }

    /// A chord-location value: the chordset id and the position byte. The controls chord
    /// is stored as 16 zero bytes and position 0xFF.
    package static func location(_ location: ChordLocation) -> [UInt8] {
        switch location {
        case .chordset(let id, let position): Self.id(id) + [UInt8(clamping: position)]
        case .controls: [UInt8](repeating: 0, count: 16) + [0xFF]
        }
    }

    /// Reads a chord-location value.
    package static func location(_ bytes: UnsafeRawBufferPointer) -> ChordLocation? {
        guard bytes.count == 17 else { return nil }
        if bytes[16] == 0xFF { return .controls }
        return .chordset(id(bytes), position: Int(bytes[16]))
    }

    /// ``sortKey(_:)-(UUID)`` of an id held as a dictionary key.
    package static func sortKey(_ key: IDKey) -> (UInt64, UInt64) {
        (UInt64(bigEndian: key.high), UInt64(bigEndian: key.low))
    }

    /// An id as two integers that compare like its bytes (memcmp order), for sorting.
    package static func sortKey(_ id: UUID) -> (UInt64, UInt64) {
        withUnsafeBytes(of: id.uuid) { raw in
            (UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
             UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
    }

    /// A session prefix: the name's UTF-8 length (one byte; names are at most 128 bytes)
    /// and its bytes, so that one session's keys never run into another's.
    package static func session(_ session: String) -> [UInt8] {
        withSession(session) { Array($0) }
    }

    /// Calls `body` with ``session(_:)``'s bytes, on the stack.
    @inlinable
    package static func withSession<R>(_ session: String, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeTemporaryAllocation(byteCount: 256, alignment: 1) { buffer in
            var count = 1
            for byte in session.utf8.prefix(255) {
                buffer[count] = byte
                count += 1
            }
            buffer[0] = UInt8(count - 1)
            return try body(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// A revision key: 0 + the chordset id, or one byte for the controls chord (1), the
    /// collection (2) and delete-all (3).
    package static func revision(_ key: RevisionKey) -> [UInt8] { KeyBytes.revision(key).array }

    /// Reads a revision key.
    package static func revisionKey(_ bytes: UnsafeRawBufferPointer) throws(ChordStoreError) -> RevisionKey {
        switch (bytes.count, bytes.first) {
        case (17, 0): return .chordset(id(UnsafeRawBufferPointer(rebasing: bytes[1...])))
        case (1, 1): return .controls
        case (1, 2): return .collection
        case (1, 3): return .bulk
        default: throw ChordStoreError(.dataLoss, "a revision key is \(bytes.count) bytes starting \(bytes.first ?? 0)")
        }
    }

    /// A revision value: the last change and the last change by another session (8 bytes
    /// big-endian each), then the last change's session.
    package static func revision(_ revision: Revision) -> [UInt8] {
        withRevision(revision) { Array($0) }
    }

    /// Calls `body` with ``revision(_:)-(Revision)``'s bytes, on the stack when the
    /// session's name is short.
    @inlinable
    package static func withRevision<R>(_ revision: Revision, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let session = revision.lastSession.utf8
        return try withUnsafeTemporaryAllocation(byteCount: 16 + session.count, alignment: 8) { buffer in
            buffer.storeBytes(of: revision.last.bigEndian, toByteOffset: 0, as: UInt64.self)
            buffer.storeBytes(of: revision.lastByOther.bigEndian, toByteOffset: 8, as: UInt64.self)
            var count = 16
            for byte in session {
                buffer[count] = byte
                count += 1
            }
            return try body(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// Reads a revision value.
    package static func revision(_ bytes: UnsafeRawBufferPointer) throws(ChordStoreError) -> Revision {
        guard bytes.count >= 16 else { throw ChordStoreError(.dataLoss, "a revision is \(bytes.count) bytes; at least 16") }
        return Revision(
            last: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)),
            lastSession: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[16...]), as: UTF8.self),
            lastByOther: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
    }
}
