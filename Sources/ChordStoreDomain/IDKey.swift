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

    /// What `Dictionary` and `Set` hash with: both halves mixed with the process's key and
    /// the table's seed through two multiply-xorshift rounds (every bit of the result
    /// depends on every bit of the id and of the keys).
    package func _rawHashValue(seed: Int) -> Int {
        var mixed = high ^ Self.processKey ^ UInt64(truncatingIfNeeded: seed)
        mixed = (mixed ^ (mixed &>> 32)) &* 0xD6E8_FEB8_6659_FD93
        mixed ^= low
        mixed = (mixed ^ (mixed &>> 32)) &* 0xD6E8_FEB8_6659_FD93
        return Int(truncatingIfNeeded: mixed ^ (mixed &>> 32))
    }
}
