import ChordStoreDomain
import Foundation

/// Chordsets for the domain's tests, the same for the same number.
enum SampleChordsets {
    /// Chordset `n`: ids and colours from a generator seeded with `n`, titled "c`n`",
    /// created `n` microseconds after 1970, at `index` in the user order.
    static func numbered(_ n: Int, index: Int) -> Chordset {
        var generator = SplitMix64(seed: UInt64(n))
        return Chordset(
            id: UUID.random(using: &generator), title: "c\(n)", creationDate: Instant(microsecondsSince1970: Int64(n)),
            index: index,
            chords: (0..<8).map { Chord(id: UUID.random(using: &generator), position: $0, bpm: 120, color: .random(using: &generator)) })
    }
}
