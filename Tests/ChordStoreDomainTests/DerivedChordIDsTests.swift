@testable import ChordStoreDomain
import Foundation
import Testing

/// Chord ids derived from their chordset's: what lets the state in memory keep no index
/// entry for the chords of the chordsets the store names.
@Suite("Derived chord ids")
struct DerivedChordIDsTests {
    let now = Instant(microsecondsSince1970: 1_700_000_000_123_456)

    @Test("a chord's derived id names its chordset and position; ids ending in 0 or 9–F name none; keys agree with ids")
    func roundTrip() {
        var random = SplitMix64(seed: 11)
        for _ in 0..<1_000 {
            let chordset = DerivedChordIDs.aligned(UUID.version7(at: now, using: &random))
            #expect(chordset.uuid.15 & 0x0F == 0)
            for position in 0..<Chordset.chordCount {
                let chord = DerivedChordIDs.chordID(of: chordset, position: position)
                #expect(chord.uuid.15 & 0x0F == UInt8(position + 1))
                #expect(DerivedChordIDs.owner(of: chord) == chordset)
                #expect(IDKey(chord).derivedOwner == IDKey(chordset))
            }
            #expect(DerivedChordIDs.owner(of: chordset) == nil && IDKey(chordset).derivedOwner == nil)
            var bytes = chordset.uuid
            bytes.15 |= 0x09
            #expect(DerivedChordIDs.owner(of: UUID(uuid: bytes)) == nil && IDKey(UUID(uuid: bytes)).derivedOwner == nil)
        }
        // Any id: the key's owner is the id's (or none for both).
        for _ in 0..<1_000 {
            let id = UUID()
            #expect(IDKey(id).derivedOwner.map(\.id) == DerivedChordIDs.owner(of: id))
        }
    }

    @Test("increasing ids: a chordset's id ends in 0, and the next id drawn comes after its eight chords'")
    func increasing() {
        var ids = IncreasingIDs(SplitMix64(seed: 12))
        var previous = ids.nextID(at: now)
        for _ in 0..<1_000 {
            let chordset = ids.nextChordsetID(at: now)
            #expect(chordset.uuid.15 & 0x0F == 0 && chordset > previous)
            let last = DerivedChordIDs.chordID(of: chordset, position: Chordset.chordCount - 1)
            let next = ids.nextID(at: now)
            #expect(next > last, "the id after a chordset's is one of its chords'")
            previous = next
        }
    }

    @Test("a millisecond without room for a chordset and its chords goes on in the next one")
    func runningOut() {
        let full = UUID.version7RandomMask
        let next = IncreasingIDs.alignedSuccessor(of: (1_700_000_000_123, full - 10), at: 1_700_000_000_123, increment: 1, fresh: 0x35)
        #expect(next == (1_700_000_000_124, 0x30))
        // Room for the chords at the end of the millisecond: it stays.
        let last = IncreasingIDs.alignedSuccessor(of: (1_700_000_000_123, full - 20), at: 1_700_000_000_123, increment: 1, fresh: 0x35)
        #expect(last == (1_700_000_000_123, full - 15))
        let fits = IncreasingIDs.alignedSuccessor(of: (1_700_000_000_123, 0x21), at: 1_700_000_000_123, increment: 1, fresh: 0x35)
        #expect(fits == (1_700_000_000_123, 0x30))
    }

    @Test("an add the store names derives its chords' ids, which the state finds without indexing them; a client's ids are indexed")
    func state() throws {
        var ids = IncreasingIDs(SplitMix64(seed: 13))
        var state = InMemoryState()
        let decider = Decider()
        func add(_ add: AddChordset, sequence: UInt64) throws -> Chordset {
            let event = try decider.decide(.addChordset(add), state: state, timestamp: now, using: &ids)
            try Fold.apply(event, sequence: sequence, to: &state)
            guard case .chordsetAdded(let chordset) = event else { throw ChordStoreError(.internal, "not an add: \(event)") }
            return chordset
        }
        let named = try add(AddChordset(title: "named by the store"), sequence: 1)
        #expect(named.chords.map(\.id) == (0..<8).map { DerivedChordIDs.chordID(of: named.id, position: $0) })
        #expect(state.indexedChordCount == 0)
        // A client's chordset id: its chords' ids are drawn, not derived, and indexed.
        let mine = try add(AddChordset(id: DerivedChordIDs.aligned(UUID()), title: "named by a client"), sequence: 2)
        #expect(mine.chords.allSatisfy { DerivedChordIDs.owner(of: $0.id) != mine.id })
        #expect(state.indexedChordCount == 8)
        // A client's chord id that looks derived from a chordset that does not hold it.
        let lookalike = DerivedChordIDs.chordID(of: DerivedChordIDs.aligned(UUID()), position: 2)
        let third = try add(AddChordset(title: "a lookalike", chords: (0..<8).map { ChordSpec(id: $0 == 5 ? lookalike : nil, position: $0) }), sequence: 3)
        #expect(state.indexedChordCount == 9)
        for chordset in [named, mine, third] {
            for chord in chordset.chords { #expect(state.chordLocation(chord.id) == .chordset(chordset.id, position: chord.position)) }
        }
        #expect(state.chordLocation(DerivedChordIDs.chordID(of: DerivedChordIDs.aligned(UUID()), position: 1)) == nil)
        #expect(state.chordCount() == 24)
        // A derived id cannot be taken by another chordset.
        #expect(throws: ChordStoreError.self) {
            try add(AddChordset(title: "taken", chords: (0..<8).map { ChordSpec(id: $0 == 0 ? named.chords[3].id : nil, position: $0) }), sequence: 4)
        }
        // Deleting takes the index entries with the chords; the counts follow.
        try Fold.apply(.chordsetDeleted(third), sequence: 4, to: &state)
        try Fold.apply(.chordsetDeleted(named), sequence: 5, to: &state)
        #expect(state.indexedChordCount == 8 && state.chordCount() == 8)
        for chord in named.chords + third.chords { #expect(state.chordLocation(chord.id) == nil) }
    }

    @Test("an add the store names is refused when a client's chord already has one of its derived ids")
    func derivedIDTakenByAClient() throws {
        var ids = IncreasingIDs(SplitMix64(seed: 21))
        var state = InMemoryState()
        let decider = Decider()
        var probe = ids
        let next = probe.nextChordsetID(at: now)
        // Every id and colour given: the client's add draws nothing from the generator.
        let color = ChordColor(hue: 0.1, purity: 0.2, brightness: 0.3, alpha: 1)
        let specs = (0..<8).map { ChordSpec(id: $0 == 4 ? DerivedChordIDs.chordID(of: next, position: 6) : UUID(), position: $0, color: color) }
        let client = try decider.decide(.addChordset(AddChordset(id: UUID(), title: "client", chords: specs)), state: state, timestamp: now, using: &ids)
        try Fold.apply(client, sequence: 1, to: &state)
        #expect(state.holdsChordID(derivedFrom: next))
        do {
            _ = try decider.decide(.addChordset(AddChordset(title: "named by the store")), state: state, timestamp: now, using: &ids)
            Issue.record("the add was not refused")
        } catch {
            #expect(error.reason == .idInUse && error.message.contains("\(DerivedChordIDs.chordID(of: next, position: 6))"), "\(error)")
        }
        // The next id is free again.
        #expect(!state.holdsChordID(derivedFrom: ids.nextChordsetID(at: now)))
    }

    @Test("a chordset's derived chords are stored as tempo and colour alone, read back as they were, and edited in place")
    func storedChords() {
        var random = SplitMix64(seed: 14)
        let chordset = DerivedChordIDs.aligned(UUID.version7(at: now, using: &random))
        let chords = (0..<8).map {
            Chord(id: DerivedChordIDs.chordID(of: chordset, position: $0), position: $0, bpm: 60 + Double($0), color: .random(using: &random))
        }
        var stored = StoredChords(chords, of: chordset)
        #expect(stored.areAllDerived && stored.count == 8 && MemoryLayout<StoredChords.Looks>.stride == 40)
        #expect(stored.chords(of: chordset) == chords)
        #expect(stored.position(of: chords[6].id, in: chordset) == 6)
        #expect(stored.position(of: DerivedChordIDs.chordID(of: DerivedChordIDs.aligned(UUID()), position: 6), in: chordset) == nil)
        #expect(stored.update(chords[3].id, of: chordset) { $0.bpm = 200 })
        #expect(stored.areAllDerived && stored.chords(of: chordset)[3].bpm == 200)
        // A change of a chord's id stores the chords as they are.
        let other = UUID()
        #expect(stored.update(chords[5].id, of: chordset) { $0.id = other })
        #expect(!stored.areAllDerived && stored.position(of: other, in: chordset) == 5 && stored.chords(of: chordset)[3].bpm == 200)

        // One id of a client's, or a chordset id not ending in 0: as they are.
        var mixed = chords
        mixed[2].id = UUID()
        #expect(!StoredChords(mixed, of: chordset).areAllDerived && StoredChords(mixed, of: chordset).chords(of: chordset) == mixed)
        var unaligned = chordset.uuid
        unaligned.15 |= 0x0C
        #expect(!StoredChords(chords, of: UUID(uuid: unaligned)).areAllDerived)
        #expect(!StoredChords(Array(chords.prefix(7)), of: chordset).areAllDerived)
    }
}
