import ChordStoreRecords

/// What the `sessions` database keeps per session (5 × 8 bytes, big-endian): the tops
/// of its undo and redo stacks (0: empty), how many entries the redo stack holds, and
/// its first and last events (0: none).
struct SessionRecord: Hashable {
    var undoTop: UInt64 = 0
    var redoTop: UInt64 = 0
    var redoDepth: UInt64 = 0
    var first: UInt64 = 0
    var last: UInt64 = 0


    var bytes: KeyBytes {
        var bytes = KeyBytes()
        bytes.append(bigEndian: undoTop)
        bytes.append(bigEndian: redoTop)
        bytes.append(bigEndian: redoDepth)
        bytes.append(bigEndian: first)
        bytes.append(bigEndian: last)
        return bytes
    }

    init() {}

    init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count == 5 * 8 else { return nil }
        (undoTop, redoTop, redoDepth, first, last) = (
            BigEndianFields.field(0, of: bytes), BigEndianFields.field(1, of: bytes), BigEndianFields.field(2, of: bytes),
            BigEndianFields.field(3, of: bytes), BigEndianFields.field(4, of: bytes)
        )
    }
}

/// What the `session-links` database keeps per event (3 × 8 bytes, big-endian): the
/// stack entry below it, if the event was pushed on its session's undo or redo stack
/// (an event is pushed at most once, when it is written), and its session's previous
/// and next events (0: none).
struct SessionLink: Hashable {
    var below: UInt64 = 0
    var previous: UInt64 = 0
    var next: UInt64 = 0


    var bytes: KeyBytes {
        var bytes = KeyBytes()
        bytes.append(bigEndian: below)
        bytes.append(bigEndian: previous)
        bytes.append(bigEndian: next)
        return bytes
    }

    init(below: UInt64 = 0, previous: UInt64 = 0, next: UInt64 = 0) {
        self.below = below
        self.previous = previous
        self.next = next
    }

    init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count == 3 * 8 else { return nil }
        (below, previous, next) = (BigEndianFields.field(0, of: bytes), BigEndianFields.field(1, of: bytes), BigEndianFields.field(2, of: bytes))
    }
}

/// Reading fixed-size records of 8-byte big-endian numbers (written inline, as
/// ``KeyBytes``: no array per record, and a commit writes two or three per event).
enum BigEndianFields {
    /// The `index`th number of `bytes` (the caller checked its length).
    static func field(_ index: Int, of bytes: UnsafeRawBufferPointer) -> UInt64 {
        UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self))
    }
}
