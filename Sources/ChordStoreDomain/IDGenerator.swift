public import Foundation

/// The source of a ``Decider``'s new ids and random colours.
///
/// A random number generator that declares the conformance gets version-7 UUIDs with
/// random bits (``Foundation/UUID/version7(at:using:)``), as ``SplitMix64`` and
/// `SystemRandomNumberGenerator` do. The store's writer uses ``IncreasingIDs``, whose
/// ids also increase within a millisecond.
public protocol IDGenerator: RandomNumberGenerator {
    /// A new id for an item created at `instant`.
    mutating func nextID(at instant: Instant) -> UUID
    /// A new chordset's id, created at `instant`: its last nibble is zero, so that
    /// ``DerivedChordIDs`` derives its chords' ids from it. ``IncreasingIDs`` never gives
    /// those ids again; random generators give them as rarely as any two random ids meet
    /// (and the decider refuses an id in use).
    mutating func nextChordsetID(at instant: Instant) -> UUID
}

extension IDGenerator {
    /// A version-7 UUID of `instant` with random bits from this generator.
    public mutating func nextID(at instant: Instant) -> UUID {
        UUID.version7(at: instant, using: &self)
    }

    /// A random version-7 id of `instant` with its last nibble zero (the chances that a
    /// later random id is one of its chords' are those of any two random ids meeting).
    public mutating func nextChordsetID(at instant: Instant) -> UUID {
        DerivedChordIDs.aligned(nextID(at: instant))
    }
}

extension SystemRandomNumberGenerator: IDGenerator {}
