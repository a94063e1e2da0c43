/// What the `sessions` database keeps per session (5 × 8 bytes, big-endian): the tops
/// of its undo and redo stacks (0: empty), how many entries the redo stack holds, and
/// its first and last events (0: none).
struct SessionRecord: Hashable {
    var undoTop: UInt64 = 0
    var redoTop: UInt64 = 0
    var redoDepth: UInt64 = 0
    var first: UInt64 = 0
    var last: UInt64 = 0

    static let size = 40

    var bytes: [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(Self.size)
        for value in [undoTop, redoTop, redoDepth, first, last] {
            withUnsafeBytes(of: value.bigEndian) { result.append(contentsOf: $0) }
        }
        return result
    }

    init() {}

    init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count == Self.size else { return nil }
        func field(_ index: Int) -> UInt64 { UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self)) }
        (undoTop, redoTop, redoDepth, first, last) = (field(0), field(1), field(2), field(3), field(4))
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

    static let size = 24

    var bytes: [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(Self.size)
        for value in [below, previous, next] {
            withUnsafeBytes(of: value.bigEndian) { result.append(contentsOf: $0) }
        }
        return result
    }

    init(below: UInt64 = 0, previous: UInt64 = 0, next: UInt64 = 0) {
        self.below = below
        self.previous = previous
        self.next = next
    }

    init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count == Self.size else { return nil }
        func field(_ index: Int) -> UInt64 { UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self)) }
        (below, previous, next) = (field(0), field(1), field(2))
    }
}
