public import Foundation

/// Version-7 ids that increase: each is greater than every one before it, also within a
/// millisecond (RFC 9562, section 6.2, method 3: a later id of the same millisecond is
/// the one before it plus a random increment).
///
/// Indexes keyed by these ids (a chordset's row, its chords, its place and its creation
/// key) then grow at their right edge, where LMDB leaves each page it splits full, as
/// long as no greater key is there: an id a client chose (a version-4 one mostly sorts
/// above every version-7 id) or a later store's keys. With ids in random order within a
/// millisecond, as a batch of adds drew them before, most splits fell inside the last
/// page and left two half-full ones: the files of a million adds took 2,622 MiB, and
/// 2,203 MiB with these ids (docs/REPLICATION.md, "Increasing ids").
///
/// ```swift
/// var ids = IncreasingIDs(SplitMix64(seed: 7))
/// let first = ids.nextID(at: .now), second = ids.nextID(at: .now)  // first < second
/// ```
public struct IncreasingIDs: IDGenerator, Sendable {
    /// An id's milliseconds and its 74 random bits.
    typealias Parts = (milliseconds: UInt64, random: UInt128)

    private var base: SplitMix64
    private var last: Parts?

    /// Ids and colours from `base`'s random bits.
    public init(_ base: SplitMix64) {
        self.base = base
    }

    /// The next 64 random bits (for colours).
    public mutating func next() -> UInt64 { base.next() }

    /// An id greater than the one before it (see ``successor(of:at:increment:fresh:)``).
    public mutating func nextID(at instant: Instant) -> UUID {
        let fresh = (UInt128(base.next()) << 64 | UInt128(base.next())) & (UUID.version7RandomMask >> 1)
        let next = Self.successor(
            of: last, at: UUID.version7Milliseconds(instant), increment: 1 + UInt128(base.next() >> 32), fresh: fresh)
        last = next
        return UUID.version7(milliseconds: next.milliseconds, random: next.random)
    }

    /// An id greater than the one before it, with its last nibble zero; the eight ids
    /// after it are its chords' (``DerivedChordIDs``), and the next id is greater than them.
    public mutating func nextChordsetID(at instant: Instant) -> UUID {
        let fresh = (UInt128(base.next()) << 64 | UInt128(base.next())) & (UUID.version7RandomMask >> 1)
        let next = Self.alignedSuccessor(
            of: last, at: UUID.version7Milliseconds(instant), increment: 1 + UInt128(base.next() >> 32), fresh: fresh)
        last = (next.milliseconds, next.random + UInt128(Chordset.chordCount))
        return UUID.version7(milliseconds: next.milliseconds, random: next.random)
    }

    /// ``successor(of:at:increment:fresh:)`` rounded up to a multiple of 16 (a zero last
    /// nibble: the random bits' last four are the id's), with room for eight more ids
    /// in its millisecond.
    static func alignedSuccessor(of last: Parts?, at milliseconds: UInt64, increment: UInt128, fresh: UInt128) -> Parts {
        var next = successor(of: last, at: milliseconds, increment: increment, fresh: fresh)
        next.random = (next.random + 15) & ~15
        if next.random + UInt128(Chordset.chordCount) > UUID.version7RandomMask {
            next = (next.milliseconds + 1, fresh & ~15)
        }
        return next
    }

    /// The id after `last` at `milliseconds`: of that millisecond with the `fresh` random
    /// bits (73 of them: a millisecond then holds at least 2^41 ids) when it is later
    /// than the last id's, else of the last id's millisecond with its random bits plus
    /// `increment`, or of the next millisecond with `fresh` bits should they run out. (A
    /// clock past the year 10889, the last of 48 bits of milliseconds, is not handled.)
    static func successor(of last: Parts?, at milliseconds: UInt64, increment: UInt128, fresh: UInt128) -> Parts {
        guard let last, last.milliseconds >= milliseconds else { return (milliseconds, fresh) }
        let random = last.random + increment
        return random > UUID.version7RandomMask ? (last.milliseconds + 1, fresh) : (last.milliseconds, random)
    }
}
