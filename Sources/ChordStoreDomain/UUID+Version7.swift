public import Foundation

extension UUID {
    /// A time-ordered version-7 UUID (RFC 9562): 48 bits of Unix milliseconds from
    /// `instant`, then 74 bits from `generator`.
    ///
    /// The store gives new chordsets and chords these ids because B-tree indexes keyed by
    /// them grow at their right edge: a batch of adds dirties a few pages instead of one
    /// random page per id, which is what makes group commit pay off on disk. Ids drawn
    /// within one millisecond are in random order among themselves; ``IncreasingIDs``
    /// orders those too.
    public static func version7(at instant: Instant, using generator: inout some RandomNumberGenerator) -> UUID {
        // The bits sit where earlier versions put them (the two words' bytes in memory
        // order from the seventh on), so a seeded generator gives the ids it always gave.
        let (first, second) = (generator.next(), generator.next())
        let randA = (UInt16(truncatingIfNeeded: first >> 48) & 0x0F) << 8 | UInt16(truncatingIfNeeded: first >> 56)
        let randB = (second & 0x3F) << 56 | second.byteSwapped & 0x00FF_FFFF_FFFF_FFFF
        return version7(milliseconds: version7Milliseconds(instant), random: UInt128(randA) << 62 | UInt128(randB))
    }

    /// Whether the id is a version-7 one (its version nibble is 7): the writer's, or a
    /// client's that orders its ids by time. Such ids are likely each larger than the last.
    package var isTimeOrdered: Bool { uuid.6 >> 4 == 7 }

    /// The 74 random bits' mask.
    static let version7RandomMask: UInt128 = (1 << 74) - 1

    /// `instant`'s Unix milliseconds as a version-7 id holds them (none before 1970, at
    /// most 48 bits).
    static func version7Milliseconds(_ instant: Instant) -> UInt64 {
        min(UInt64(clamping: max(0, instant.microsecondsSince1970 / 1_000)), (1 << 48) - 1)
    }

    /// The version-7 id of `milliseconds` (48 bits) and `random` (the low 74 bits are
    /// used: the top 12 as `rand_a`, the rest as `rand_b`), so that ids compare, byte by
    /// byte, as their (milliseconds, random) pairs do.
    static func version7(milliseconds: UInt64, random: UInt128) -> UUID {
        let randA = UInt16(truncatingIfNeeded: random >> 62) & 0x0FFF
        let randB = UInt64(truncatingIfNeeded: random) & ((1 << 62) - 1)
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { raw in
            for i in 0..<6 { raw[i] = UInt8(truncatingIfNeeded: milliseconds >> (8 * (5 - UInt64(i)))) }
            raw[6] = 0x70 | UInt8(randA >> 8)
            raw[7] = UInt8(truncatingIfNeeded: randA)
            raw[8] = 0x80 | UInt8(randB >> 56)
            for i in 9..<16 { raw[i] = UInt8(truncatingIfNeeded: randB >> (8 * (15 - UInt64(i)))) }
        }
        return UUID(uuid: bytes)
    }
}
