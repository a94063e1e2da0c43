@testable import ChordStoreDomain
import Foundation
import Testing

/// The writer's ids: version-7 UUIDs that increase, also within a millisecond, so that
/// the views' id-keyed indexes grow only at their right edge. (`UUID`'s `<` compares
/// bytes in order, as LMDB compares keys.)
@Suite("Increasing ids")
struct IncreasingIDsTests {
    let now = Instant(microsecondsSince1970: 1_700_000_000_123_456)

    /// The id's 48-bit millisecond field.
    static func milliseconds(_ id: UUID) -> UInt64 {
        withUnsafeBytes(of: id.uuid) { raw in raw[0..<6].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
    }

    /// Whether `id` carries version 7 and the RFC 9562 variant.
    static func isVersion7(_ id: UUID) -> Bool {
        withUnsafeBytes(of: id.uuid) { raw in raw[6] >> 4 == 7 && raw[8] >> 6 == 0b10 }
    }

    @Test("ids drawn at one instant increase, byte by byte, and are version-7 ids of its millisecond")
    func sameMillisecond() {
        var ids = IncreasingIDs(SplitMix64(seed: 3))
        let drawn = (0..<1_000).map { _ in ids.nextID(at: now) }
        #expect(drawn == drawn.sorted())
        #expect(Set(drawn).count == drawn.count)
        #expect(drawn.allSatisfy { Self.isVersion7($0) && Self.milliseconds($0) == 1_700_000_000_123 })
    }

    @Test("a later millisecond's id carries it; an id drawn after the clock stepped back still comes after the last")
    func clockSteps() {
        var ids = IncreasingIDs(SplitMix64(seed: 4))
        let first = ids.nextID(at: now)
        let later = ids.nextID(at: Instant(microsecondsSince1970: now.microsecondsSince1970 + 5_000))
        let back = ids.nextID(at: Instant(microsecondsSince1970: now.microsecondsSince1970 - 60_000_000))
        #expect(Self.milliseconds(later) == 1_700_000_000_128)
        #expect(Self.milliseconds(back) == 1_700_000_000_128)
        #expect(first < later && later < back)
        #expect([first, later, back].allSatisfy(Self.isVersion7))
    }

    @Test("a millisecond whose random bits run out goes on in the next one, with fresh bits")
    func runningOut() {
        let full = UUID.version7RandomMask
        let same = IncreasingIDs.successor(of: (1_700_000_000_123, full - 5), at: 1_700_000_000_123, increment: 5, fresh: 9)
        #expect(same == (1_700_000_000_123, full))
        let next = IncreasingIDs.successor(of: same, at: 1_700_000_000_123, increment: 1, fresh: 9)
        #expect(next == (1_700_000_000_124, 9))
        #expect(UUID.version7(milliseconds: same.milliseconds, random: same.random) < UUID.version7(milliseconds: next.milliseconds, random: next.random))
        // A later millisecond starts afresh; an earlier one (a clock stepped back) goes on from the last.
        #expect(IncreasingIDs.successor(of: same, at: 1_700_000_000_200, increment: 1, fresh: 9) == (1_700_000_000_200, 9))
        #expect(IncreasingIDs.successor(of: (1_700_000_000_123, 40), at: 1_600_000_000_000, increment: 2, fresh: 9) == (1_700_000_000_123, 42))
    }

    @Test("an add decided with increasing ids gives its chords ids above the chordset's, rising with position")
    func decidedAdd() throws {
        var ids = IncreasingIDs(SplitMix64(seed: 6))
        var state = InMemoryState()
        var previous: UUID?
        for n in 0..<20 {
            let event = try Decider().decide(.addChordset(AddChordset(title: "c\(n)")), state: state, timestamp: now, using: &ids)
            guard case .chordsetAdded(let chordset) = event else {
                Issue.record("not an add")
                return
            }
            let drawn = [chordset.id] + chordset.chords.map(\.id)
            #expect(drawn == drawn.sorted(), "chordset \(n)'s ids are not in the order they were drawn")
            if let previous { #expect(previous < chordset.id) }
            previous = chordset.chords.last?.id
            try Fold.apply(event, sequence: UInt64(n + 1), to: &state)
        }
    }
}
