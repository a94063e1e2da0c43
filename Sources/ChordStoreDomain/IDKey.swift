package import Foundation

/// A UUID as a dictionary key, hashed by a keyed mix of its two 64-bit halves instead of
/// SipHash over its 16 bytes.
///
/// A replay folds every event into dictionaries keyed by chordset and chord ids, and
/// SipHash was most of that fold (`Hasher` 19.5% of an in-memory commit's samples, 9% of
/// a rebuild's replay). The mix takes a key drawn at random when the process starts (and
/// the table's own seed), so which ids collide cannot be known from outside the process;
/// it is no cryptographic hash, which a table of ids (most of them drawn by this server)
/// does not need. `Dictionary` and `Set` hash through `_rawHashValue(seed:)`, an
/// underscored requirement of `Hashable` that the standard library's own integers
/// implement the same way.
package struct IDKey: Hashable, Sendable {
    /// The id's first eight bytes, in memory order.
    package let high: UInt64
    /// Its last eight bytes.
    package let low: UInt64

    /// The key of `id`.
    package init(_ id: UUID) {
        (high, low) = withUnsafeBytes(of: id.uuid) { raw in
            (raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
    }

    /// The key of the id whose halves, in memory order, are `high` and `low`.
    package init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The id this key was made of.
    package var id: UUID {
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { raw in
            raw.storeBytes(of: high, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: low, toByteOffset: 8, as: UInt64.self)
        }
        return UUID(uuid: uuid)
    }

    /// Feeds both halves to `hasher` (SipHash: what a key hashed as part of a larger
    /// value gets; tables of keys use ``_rawHashValue(seed:)``).
    package func hash(into hasher: inout Hasher) {
        hasher.combine(high)
        hasher.combine(low)
    }

    /// The process's random key, mixed into every table hash.
    private static let processKey = UInt64.random(in: .min ... .max)

    /// What `Dictionary` and `Set` hash with: ``mix(high:low:key:)`` of both halves with the
    /// process's key and the table's seed.
    package func _rawHashValue(seed: Int) -> Int {
        Self.mix(high: high, low: low, key: Self.processKey ^ UInt64(truncatingIfNeeded: seed))
    }

    /// The hash of the id whose halves are `high` and `low` under `key`: the high half and the
    /// key through a multiply-xorshift round, the low half xored in, then SplitMix64's
    /// finalizer, so that every bit of the result depends on every bit of the id and of the
    /// key. (One more multiply-xorshift round in place of the finalizer left ids that differ
    /// in the low half's first bytes filling as few as 2,330 of 4,096 buckets (57%) under one
    /// key in 1,500, against about 2,589 (63%) for random hashes.)
    package static func mix(high: UInt64, low: UInt64, key: UInt64) -> Int {
        var mixed = high ^ key
        mixed = (mixed ^ (mixed &>> 32)) &* 0xD6E8_FEB8_6659_FD93
        mixed ^= low
        mixed = (mixed ^ (mixed &>> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed &>> 27)) &* 0x94D0_49BB_1331_11EB
        return Int(truncatingIfNeeded: mixed ^ (mixed &>> 31))
    }
}
