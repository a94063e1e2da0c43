@testable import ChordStoreDomain
import Foundation
import Testing

/// The command rules that need state: unknown ids, duplicate ids, chord counts, limits.
@Suite("Decider")
struct DeciderTests {
    var state = InMemoryState()
    var generator = SplitMix64(seed: 7)
    let decider = Decider()
    let now = Instant(microsecondsSince1970: 1_700_000_000_000_000)

    private mutating func run(_ command: Command, decider: Decider? = nil) throws(ChordStoreError) -> Event {
        let event = try (decider ?? self.decider).decide(command, state: state, timestamp: now, using: &generator)
        do { try Fold.apply(event, sequence: 1, to: &state) } catch { throw ChordStoreError(.internal, "\(error)") }
        return event
    }

    private mutating func expectRefused(_ code: ChordStoreError.Code, _ command: Command, decider: Decider? = nil, mentioning text: String) {
        let before = state
        do {
            _ = try run(command, decider: decider)
            Issue.record("expected \(code) for \(command.kindName)")
        } catch {
            #expect(error.code == code, "\(error)")
            #expect(error.message.contains(text), "message: \(error.message)")
        }
        #expect(state == before, "a refused command changed the state")
    }

    @Test("add creates eight chords at positions 0–7 with random colours, default bpm and the commit time")
    mutating func addDefaults() throws {
        guard case .chordsetAdded(let chordset) = try run(.addChordset(AddChordset(title: "Verse"))) else {
            Issue.record("not an add")
            return
        }
        #expect(chordset.chords.map(\.position) == Array(0..<8))
        #expect(Set(chordset.chords.map(\.id)).count == 8)
        #expect(Set(chordset.chords.map(\.color)).count == 8)
        #expect(chordset.chords.allSatisfy { $0.bpm == Limits().defaultBPM })
        #expect(chordset.creationDate == now)
        #expect(chordset.index == 0)
        try Invariants.check(state)
    }

    @Test("add takes given chords in any order and sorts them by position")
    mutating func addGivenChords() throws {
        let specs = (0..<8).reversed().map { ChordSpec(position: $0, bpm: Double(60 + $0)) }
        guard case .chordsetAdded(let chordset) = try run(.addChordset(AddChordset(chords: specs))) else { return }
        #expect(chordset.chords.map(\.bpm) == (0..<8).map { Double(60 + $0) })
    }

    @Test("add refuses seven chords, a repeated position, an id given twice, and ids already in use")
    mutating func addRefusals() throws {
        expectRefused(.invalidArgument, .addChordset(AddChordset(chords: (0..<7).map { ChordSpec(position: $0) })), mentioning: "exactly 8 chords")
        var repeated = (0..<8).map { ChordSpec(position: $0) }
        repeated[7].position = 0
        expectRefused(.invalidArgument, .addChordset(AddChordset(chords: repeated)), mentioning: "position 0 is given twice")
        let shared = UUID()
        var twice = (0..<8).map { ChordSpec(position: $0) }
        twice[0].id = shared
        twice[1].id = shared
        expectRefused(.alreadyExists, .addChordset(AddChordset(chords: twice)), mentioning: "given twice")

        guard case .chordsetAdded(let existing) = try run(.addChordset(AddChordset())) else { return }
        expectRefused(.alreadyExists, .addChordset(AddChordset(id: existing.id)), mentioning: "already exists")
        var reuse = (0..<8).map { ChordSpec(position: $0) }
        reuse[3].id = existing.chords[5].id
        expectRefused(.alreadyExists, .addChordset(AddChordset(chords: reuse)), mentioning: "already in use")
        var chordsetIDAsChord = (0..<8).map { ChordSpec(position: $0) }
        let newID = UUID()
        chordsetIDAsChord[0].id = newID
        expectRefused(.alreadyExists, .addChordset(AddChordset(id: newID, chords: chordsetIDAsChord)), mentioning: "given twice")
    }

    @Test("add refuses a bad title, bpm, colour and position inside a chord spec")
    mutating func addChecksSpecs() {
        expectRefused(.invalidArgument, .addChordset(AddChordset(title: "a\nb")), mentioning: "control character")
        var specs = (0..<8).map { ChordSpec(position: $0) }
        specs[2].bpm = 0
        expectRefused(.invalidArgument, .addChordset(AddChordset(chords: specs)), mentioning: "bpm")
        specs[2].bpm = nil
        specs[4].color = ChordColor(hue: 2, purity: 0, brightness: 0)
        expectRefused(.invalidArgument, .addChordset(AddChordset(chords: specs)), mentioning: "hue")
        specs[4].color = nil
        specs[7].position = 8
        expectRefused(.invalidArgument, .addChordset(AddChordset(chords: specs)), mentioning: "position 8")
    }

    @Test("the chordset limit refuses the add beyond it with RESOURCE_EXHAUSTED")
    mutating func chordsetLimit() throws {
        var limits = Limits()
        limits.maxChordsets = 2
        let small = Decider(limits: limits)
        _ = try run(.addChordset(AddChordset()), decider: small)
        _ = try run(.addChordset(AddChordset()), decider: small)
        expectRefused(.resourceExhausted, .addChordset(AddChordset()), decider: small, mentioning: "2 chordsets")
    }

    @Test("unknown ids are NOT_FOUND for every command that names one")
    mutating func unknownIDs() {
        let unknown = UUID()
        let color = ChordColor(hue: 0, purity: 0, brightness: 0)
        expectRefused(.notFound, .renameChordset(id: unknown, title: "x"), mentioning: "no chordset")
        expectRefused(.notFound, .deleteChordset(id: unknown), mentioning: "no chordset")
        expectRefused(.notFound, .moveChordset(id: unknown, toIndex: 0), mentioning: "no chordset")
        expectRefused(.notFound, .setChordColor(chordID: unknown, color: color), mentioning: "no chord")
        expectRefused(.notFound, .setChordBPM(chordID: unknown, bpm: 60), mentioning: "no chord")
    }

    @Test("move refuses an index outside 0...count-1")
    mutating func moveBounds() throws {
        guard case .chordsetAdded(let a) = try run(.addChordset(AddChordset())) else { return }
        _ = try run(.addChordset(AddChordset()))
        expectRefused(.invalidArgument, .moveChordset(id: a.id, toIndex: 2), mentioning: "outside 0...1")
        expectRefused(.invalidArgument, .moveChordset(id: a.id, toIndex: -1), mentioning: "outside 0...1")
        _ = try run(.moveChordset(id: a.id, toIndex: 1))
        #expect(state.chordset(a.id)?.index == 1)
    }

    @Test("the controls chord keeps its id, takes colour and bpm edits, and cannot reuse a chordset chord's id")
    mutating func controlsChord() throws {
        let color = ChordColor(hue: 0.1, purity: 0.2, brightness: 0.3)
        guard case .controlsChordSet(let first?, nil) = try run(.setControlsChord(SetControlsChord(bpm: 90, color: color))) else { return }
        guard case .controlsChordSet(let second?, let previous) = try run(.setControlsChord(SetControlsChord(bpm: 100, color: color))) else { return }
        #expect(second.id == first.id)
        #expect(previous == first)
        _ = try run(.setChordBPM(chordID: first.id, bpm: 33))
        #expect(state.controlsChord()?.bpm == 33)
        guard case .chordsetAdded(let chordset) = try run(.addChordset(AddChordset())) else { return }
        expectRefused(
            .alreadyExists, .setControlsChord(SetControlsChord(id: chordset.chords[0].id, bpm: 90, color: color)),
            mentioning: "already in use")
        #expect(state.chordCount() == 9)
    }

    @Test("one id names one thing: a client's chordset id may not be a chord's, nor its chord, controls, imported or put-back ids a chordset's")
    mutating func oneNamespace() throws {
        let color = ChordColor(hue: 0.1, purity: 0.2, brightness: 0.3)
        guard case .chordsetAdded(let first) = try run(.addChordset(AddChordset(id: UUID(), title: "first"))) else {
            Issue.record("not an add")
            return
        }
        expectRefused(.alreadyExists, .addChordset(AddChordset(id: first.chords[2].id, title: "a chord's id")), mentioning: "is already a chord's")
        let chordsetsID = (0..<8).map { ChordSpec(id: $0 == 3 ? first.id : nil, position: $0) }
        expectRefused(.alreadyExists, .addChordset(AddChordset(title: "a chordset's id", chords: chordsetsID)), mentioning: "is already a chordset's")
        expectRefused(.alreadyExists, .setControlsChord(SetControlsChord(id: first.id, bpm: 90, color: color)), mentioning: "is already a chordset's")

        // An imported add is refused the same way.
        var imported = first
        imported.id = UUID()
        imported.chords = first.chords.map { var chord = $0; chord.id = UUID(); return chord }
        imported.chords[5].id = first.id
        imported.index = 1
        #expect {
            try decider.checkImported(.chordsetAdded(imported), sequence: 2, session: "s", mark: nil, state: state, changes: InMemoryChanges())
        } throws: { ($0 as? ChordStoreError)?.message.contains("gives chord id \(first.id) twice, or one in use") == true }
        #expect {
            try decider.checkImported(.controlsChordSet(Chord(id: first.id, position: 0, bpm: 90, color: color), previous: nil), sequence: 2, session: "s", mark: nil, state: state, changes: InMemoryChanges())
        } throws: { ($0 as? ChordStoreError)?.message.contains("gives the controls chord id \(first.id), which is in use") == true }

        // Deleted, its ids are free; taken meanwhile (its id by a chord, a chord's id by a
        // chordset), the chordset cannot be put back.
        _ = try run(.deleteChordset(id: first.id))
        let reuse = (0..<8).map { ChordSpec(id: $0 == 0 ? first.id : nil, position: $0) }
        guard case .chordsetAdded(let taker) = try run(.addChordset(AddChordset(title: "takes the deleted chordset's id for a chord", chords: reuse))) else {
            Issue.record("not an add")
            return
        }
        #expect {
            try decider.checkRestorable([first], state: state, extra: 1)
        } throws: { ($0 as? ChordStoreError)?.message.contains("chordset id \(first.id) is in use again") == true }
        _ = try run(.deleteChordset(id: taker.id))
        _ = try run(.addChordset(AddChordset(id: first.chords[4].id, title: "takes a deleted chord's id")))
        #expect {
            try decider.checkRestorable([first], state: state, extra: 1)
        } throws: { ($0 as? ChordStoreError)?.message.contains("chord id \(first.chords[4].id) is in use again") == true }
    }
}
