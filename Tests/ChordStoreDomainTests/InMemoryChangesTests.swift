import ChordStoreDomain
import Foundation
import Testing

@Suite("In-memory changes")
struct InMemoryChangesTests {
    /// Changes in memory through the protocol's own `advanceRevision` (read, then store),
    /// which the LMDB views use; records which history call each chordset's event made
    /// (the LMDB views write an added chordset's differently).
    private struct ReadThenStore: ChangeWriting {
        var inner = InMemoryChanges()
        var calls: [String] = []
        func undoTop(_ session: String) -> UInt64? { inner.undoTop(session) }
        func redoTop(_ session: String) -> UInt64? { inner.redoTop(session) }
        func redoDepth(_ session: String, atMost limit: Int) -> Int { inner.redoDepth(session, atMost: limit) }
        func revision(_ key: RevisionKey) -> Revision? { inner.revision(key) }
        mutating func pushUndo(_ session: String, _ sequence: UInt64) { inner.pushUndo(session, sequence) }
        mutating func popUndo(_ session: String, _ sequence: UInt64) { inner.popUndo(session, sequence) }
        mutating func pushRedo(_ session: String, _ sequence: UInt64) { inner.pushRedo(session, sequence) }
        mutating func popRedo(_ session: String, _ sequence: UInt64) { inner.popRedo(session, sequence) }
        mutating func clearRedo(_ session: String) { inner.clearRedo(session) }
        mutating func setRevision(_ key: RevisionKey, _ revision: Revision) { inner.setRevision(key, revision) }
        mutating func noteHistory(chordset: UUID, _ sequence: UInt64) {
            calls.append("\(sequence) \(chordset)")
            inner.noteHistory(chordset: chordset, sequence)
        }
        mutating func noteHistory(addedChordset: UUID, _ sequence: UInt64) {
            calls.append("\(sequence) added \(addedChordset)")
            inner.noteHistory(chordset: addedChordset, sequence)
        }
        mutating func noteHistory(session: String, _ sequence: UInt64) { inner.noteHistory(session: session, sequence) }
    }

    @Test("advancing a revision in one lookup gives what reading it and storing the next gives, for every kind of key and across sessions")
    func advanceMatchesReadThenStore() throws {
        var generator = SplitMix64(seed: 7)
        let chordsets = (0..<5).map { _ in UUID.random(using: &generator) }
        let keys: [RevisionKey] = chordsets.map(RevisionKey.chordset) + [.controls, .collection, .bulk]
        var fast = InMemoryChanges()
        var plain = ReadThenStore()
        for sequence in UInt64(1)...400 {
            let key = keys[Int(generator.next() % UInt64(keys.count))]
            let session = ["alice", "bob", "carol"][Int(generator.next() % 3)]
            fast.advanceRevision(key, to: sequence, by: session)
            try plain.advanceRevision(key, to: sequence, by: session)
        }
        #expect(fast == plain.inner)
        #expect(fast.revisions == plain.inner.revisions)
        // Every key was advanced, and each revision says who changed it last and before.
        #expect(Set(fast.revisions.keys) == Set(keys))
        for key in keys {
            let revision = try #require(fast.revision(key))
            #expect(revision.lastByOther < revision.last)
        }
    }

    @Test("the revisions of chordsets and of the three shared keys come back whole through the initializer's dictionary, and a difference is named")
    func revisionsRoundTrip() throws {
        var changes = InMemoryChanges()
        let id = UUID()
        changes.setRevision(.chordset(id), Revision(last: 4, lastSession: "a", lastByOther: 2))
        changes.setRevision(.controls, Revision(last: 5, lastSession: "b", lastByOther: 0))
        changes.setRevision(.collection, Revision(last: 6, lastSession: "a", lastByOther: 5))
        changes.setRevision(.bulk, Revision(last: 3, lastSession: "c", lastByOther: 1))
        #expect(changes.revisions.count == 4)
        #expect(changes.chordsetRevisions == [id: Revision(last: 4, lastSession: "a", lastByOther: 2)])
        expectSavedPartsEqual(changes)
        var other = changes
        other.setRevision(.collection, Revision(last: 7, lastSession: "a", lastByOther: 5))
        #expect(other != changes)
        let difference = try #require(changes.firstDifference(from: other))
        #expect(difference.hasPrefix("revision of collection"))
    }

    /// Checks that `changes` made again from the parts a saved state keeps is equal to it.
    private func expectSavedPartsEqual(_ changes: InMemoryChanges) {
        let saved = InMemoryChanges(
            undo: changes.undo, redo: changes.redo, revisions: changes.revisions,
            chordsetHistory: changes.chordsetHistory, sessionHistory: changes.sessionHistory)
        #expect(saved == changes)
        #expect(saved.firstDifference(from: changes) == nil)
    }

    @Test("a chordset's revision and history, kept in one entry, read back apart: a revision alone is no history, a history alone no revision, an empty part of a history no entry")
    func chordsetEntryParts() throws {
        let (revised, noted, both, empty) = (UUID(), UUID(), UUID(), UUID())
        var changes = InMemoryChanges()
        changes.setRevision(.chordset(revised), Revision(last: 2, lastSession: "a", lastByOther: 0))
        changes.noteHistory(chordset: noted, 3)
        changes.advanceRevision(.chordset(both), to: 4, by: "b")
        changes.noteHistory(chordset: both, 4)
        changes.noteHistory(chordset: both, contentsOf: [5, 6])
        changes.noteHistory(chordset: empty, contentsOf: [])
        #expect(changes.chordsetHistory == [noted: [3], both: [4, 5, 6]])
        #expect(Set(changes.chordsetRevisions.keys) == [revised, both])
        #expect(changes.revision(.chordset(noted)) == nil)
        #expect(changes.revision(.chordset(empty)) == nil)
        #expect(changes.revision(.chordset(both)) == Revision(last: 4, lastSession: "b", lastByOther: 0))
        #expect(changes.chordsetRevisionCount == 2)
        expectSavedPartsEqual(changes)
        // A history that differs is named as one.
        var other = changes
        other.noteHistory(chordset: revised, 7)
        #expect(other != changes)
        let difference = try #require(changes.firstDifference(from: other))
        #expect(difference.hasPrefix("chordset histories"))
    }

    @Test("the chordsets a fold reports as the event's own come to the same changes and history calls as the event's chordset named, for every kind of event")
    func ownChordsetAsNamed() throws {
        let a = SampleChordsets.numbered(1, index: 0), b = SampleChordsets.numbered(2, index: 1)
        let events: [Event] = [
            .chordsetAdded(a), .chordsetAdded(b),
            .chordsetRenamed(id: a.id, title: "x", previousTitle: a.title),
            .chordColorSet(chordID: a.chords[2].id, chordsetID: a.id, color: b.chords[0].color, previous: a.chords[2].color),
            .chordBPMSet(chordID: b.chords[1].id, chordsetID: b.id, bpm: 90, previous: 120),
            .controlsChordSet(a.chords[0], previous: nil),
            .chordsetMoved(id: b.id, from: 1, to: 0),
            .chordsetDeleted(a),
            .allDeleted(count: 1),
            .allRestored(deletedAt: 9, count: 1),
        ]
        var reported = ReadThenStore()
        var named = ReadThenStore()
        for (offset, event) in events.enumerated() {
            let change = Change(sequence: UInt64(offset + 1), session: offset % 2 == 0 ? "alice" : "bob", event: event, mark: nil)
            let touched: TouchedChordsets = event.isCollectionWide ? .listed([b.id]) : .own
            try ChangeFold.apply(change, touched: touched, to: &reported)
            try ChangeFold.apply(change, chordsets: event.isCollectionWide ? [b.id] : event.chordsetID.map { [$0] } ?? [], to: &named)
        }
        #expect(reported.inner == named.inner)
        #expect(reported.inner.chordsetHistory == [a.id: [1, 3, 4, 8], b.id: [2, 5, 7, 9, 10]])
        // The same calls, an addition's as one.
        #expect(reported.calls == named.calls)
        #expect(reported.calls.prefix(3) == ["1 added \(a.id)", "2 added \(b.id)", "3 \(a.id)"])
    }

    @Test("clearing a redo stack when no session has one, and when another session has one, leaves the others alone")
    func clearRedo() {
        var changes = InMemoryChanges()
        changes.clearRedo("alice")
        #expect(changes.redo.isEmpty)
        changes.pushRedo("bob", 3)
        changes.clearRedo("alice")
        #expect(changes.redo == ["bob": [3]])
        changes.clearRedo("bob")
        #expect(changes.redo.isEmpty)
    }
}
