import ChordStoreRecords
import ChordStoreDomain

/// A store in the registry of stores: its id and name, when it was created, and its last
/// event. The registry is a projection of the log like the other views: the store events
/// (``ChordStoreDomain/StoreEvent``) add and remove entries, every other event advances
/// its store's head.
struct StoreRecord: Sendable, Hashable {
    /// 0 for `default`, else the id its creation gave it.
    var id: UInt32
    var name: String
    /// When it was created: its creation event's commit time (`default`: its first
    /// event's, zero before it has one).
    var created: Instant
    /// The log position of its creation event (0 for `default`).
    var createdAt: UInt64
    /// Its last event's sequence in the store (0: none yet).
    var head: UInt64 = 0
    /// Its last event's commit time.
    var headTimestamp = Instant(microsecondsSince1970: 0)
    /// Its last event's place in the whole log.
    var headLogSequence: UInt64 = 0

    /// Store `default` before its first event.
    static let initialDefault = StoreRecord(id: 0, name: StoreName.default, created: Instant(microsecondsSince1970: 0), createdAt: 0)

    /// The largest store id; creating a store past it is refused (1.6 billion creations).
    /// Kept below 0x61000000 so that no store's 4-byte prefix is the start of a global key
    /// of the views' `meta` database ("applied", "last-store", "views"), which deleting that
    /// store would wipe.
    static let maxID: UInt32 = 0x5FFF_FFFF

    /// The registry's value bytes: five 8-byte big-endian fields, then the name.
    var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(40 + name.utf8.count)
        for value in [UInt64(bitPattern: created.microsecondsSince1970), createdAt, head,
                      UInt64(bitPattern: headTimestamp.microsecondsSince1970), headLogSequence] {
            withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
        }
        bytes.append(contentsOf: name.utf8)
        return bytes
    }

    /// Reads a registry entry of store `id`.
    init(id: UInt32, bytes: UnsafeRawBufferPointer) throws(ChordStoreError) {
        guard bytes.count > 40 else { throw ChordStoreError(.dataLoss, "the registry entry of store \(id) is \(bytes.count) bytes; more than 40") }
        func field(_ index: Int) -> UInt64 { UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self)) }
        self.id = id
        name = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[40...]), as: UTF8.self)
        created = Instant(microsecondsSince1970: Int64(bitPattern: field(0)))
        createdAt = field(1)
        head = field(2)
        headTimestamp = Instant(microsecondsSince1970: Int64(bitPattern: field(3)))
        headLogSequence = field(4)
    }

    init(id: UInt32, name: String, created: Instant, createdAt: UInt64) {
        self.id = id
        self.name = name
        self.created = created
        self.createdAt = createdAt
    }

    /// The 4-byte prefix of the store's keys in every view database (big-endian id).
    var prefix: [UInt8] { Self.keyPrefix(id).array }

    static func prefix(_ id: UInt32) -> [UInt8] { keyPrefix(id).array }

    /// ``prefix`` held inline.
    static func keyPrefix(_ id: UInt32) -> KeyBytes {
        var key = KeyBytes()
        key.append(bigEndian: id)
        return key
    }

    /// Notes `event`, the store's next event, as its head (and `default`'s first event as
    /// its creation).
    mutating func advance(to sequence: UInt64, at timestamp: Instant, logSequence: UInt64) {
        head = sequence
        headTimestamp = timestamp
        headLogSequence = logSequence
        if id == 0, created.microsecondsSince1970 == 0 { created = timestamp }
    }
}

