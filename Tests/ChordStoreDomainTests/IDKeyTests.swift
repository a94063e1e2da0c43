import ChordStoreDomain
import Foundation
import Testing

/// The dictionary key of ids: the id it was made of, and a hash that spreads ids that
/// differ in a few bits over a table's buckets as a random one would.
@Suite("Id keys")
struct IDKeyTests {
    @Test("a key gives back its id, and equal ids make equal keys and hashes")
    func roundTrip() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<1_000 {
            let id = UUID()
            let key = IDKey(id)
            #expect(key.id == id)
            #expect(IDKey(id) == key)
            #expect(IDKey(id)._rawHashValue(seed: 17) == key._rawHashValue(seed: 17))
            #expect(IDKey(id).hashValue == key.hashValue)
            #expect(IDKey(.version7(at: .now, using: &generator)) != key)
        }
    }

    /// How many of `count` buckets the keys fill, hashed with `seed`.
    static func bucketsFilled(_ keys: [IDKey], seed: Int) -> Int {
        Set(keys.map { $0._rawHashValue(seed: seed) & (keys.count - 1) }).count
    }

    /// Ids whose 16 bytes are zero but for `value` written at byte `offset` (big-endian).
    static func ids(varying offset: Int, count: Int) -> [IDKey] {
        (0..<count).map { value in
            var bytes = [UInt8](repeating: 0, count: 16)
            bytes[offset] = UInt8(value >> 8)
            bytes[offset + 1] = UInt8(value & 0xFF)
            let uuid = bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }
            return IDKey(UUID(uuid: uuid))
        }
    }

    @Test("4,096 ids that differ in two bytes only, at either end of either half, fill more than 2,450 buckets of a 4,096-bucket table (random hashes: about 2,589), under this process's key and 1,500 others",
          arguments: [0, 6, 8, 14])
    func spread(offset: Int) {
        let keys = Self.ids(varying: offset, count: 4_096)
        for seed in [0, 1, -7_046_029_254_386_353_131] {
            let filled = Self.bucketsFilled(keys, seed: seed)
            #expect(filled > 2_450, "offset \(offset), seed \(seed): \(filled) buckets")
        }
        // The process's key is drawn at random: a mix that spreads well under most keys
        // only would fail now and then. (The mix before SplitMix64's finalizer filled 2,330
        // buckets under one key in 1,500 at offset 8.)
        var generator = SplitMix64(seed: UInt64(offset) + 1)
        for _ in 0..<1_500 {
            let key = generator.next()
            let filled = Set(keys.map { IDKey.mix(high: $0.high, low: $0.low, key: key) & (keys.count - 1) }).count
            #expect(filled > 2_450, "offset \(offset), key \(key): \(filled) buckets")
        }
    }

    @Test("a dictionary keyed by id keys holds what one keyed by ids holds, over 20,000 random inserts and removals")
    func dictionary() {
        var generator = SplitMix64(seed: 9)
        var ids: [UUID] = []
        var byKey: [IDKey: Int] = [:]
        var byID: [UUID: Int] = [:]
        for step in 0..<20_000 {
            if ids.isEmpty || generator.next() % 3 != 0 {
                let id = UUID.version7(at: .now, using: &generator)
                ids.append(id)
                byKey[IDKey(id)] = step
                byID[id] = step
            } else {
                let id = ids.remove(at: Int(generator.next() % UInt64(ids.count)))
                byKey[IDKey(id)] = nil
                byID[id] = nil
            }
        }
        #expect(byKey.count == byID.count)
        #expect(Dictionary(uniqueKeysWithValues: byKey.map { ($0.key.id, $0.value) }) == byID)
    }
}
