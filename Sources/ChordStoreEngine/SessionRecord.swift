/// What the `sessions` database keeps per session (5 × 8 bytes, big-endian): the tops
/// of its undo and redo stacks (0: empty), how many entries the redo stack holds, and
/// its first and last events (0: none).
struct SessionRecord: Hashable {
    var undoTop: UInt64 = 0
    var redoTop: UInt64 = 0
    var redoDepth: UInt64 = 0
    var first: UInt64 = 0
    var last: UInt64 = 0


    var bytes: [UInt8] { BigEndianFields.pack([undoTop, redoTop, redoDepth, first, last]) }

    init() {}

    init?(_ bytes: UnsafeRawBufferPointer) {
        guard let fields = BigEndianFields.unpack(bytes, count: 5) else { return nil }
        (undoTop, redoTop, redoDepth, first, last) = (fields[0], fields[1], fields[2], fields[3], fields[4])
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


    var bytes: [UInt8] { BigEndianFields.pack([below, previous, next]) }

    init(below: UInt64 = 0, previous: UInt64 = 0, next: UInt64 = 0) {
        self.below = below
        self.previous = previous
        self.next = next
    }

    init?(_ bytes: UnsafeRawBufferPointer) {
        guard let fields = BigEndianFields.unpack(bytes, count: 3) else { return nil }
        (below, previous, next) = (fields[0], fields[1], fields[2])
    }
}

/// Fixed-size records of 8-byte big-endian numbers.
enum BigEndianFields {
    static func pack(_ values: [UInt64]) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(values.count * 8)
        for value in values { withUnsafeBytes(of: value.bigEndian) { result.append(contentsOf: $0) } }
        return result
    }

    /// The `count` numbers of `bytes`, or `nil` if it is not `count` × 8 bytes long.
    static func unpack(_ bytes: UnsafeRawBufferPointer, count: Int) -> [UInt64]? {
        guard bytes.count == count * 8 else { return nil }
        return (0..<count).map { UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self)) }
    }
}
