import ChordStoreDomain
import Foundation
import Testing

@Suite("In-memory changes")
struct InMemoryChangesTests {
    /// The protocol's own `advanceRevision` (read, then store), which the LMDB views use.
    private struct ReadThenStore: ChangeWriting {
        var inner = InMemoryChanges()
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
        mutating func noteHistory(chordset: UUID, _ sequence: UInt64) { inner.noteHistory(chordset: chordset, sequence) }
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
        let saved = InMemoryChanges(
            undo: changes.undo, redo: changes.redo, revisions: changes.revisions,
            chordsetHistory: changes.chordsetHistory, sessionHistory: changes.sessionHistory)
        #expect(saved == changes)
        #expect(saved.firstDifference(from: changes) == nil)
        var other = changes
        other.setRevision(.collection, Revision(last: 7, lastSession: "a", lastByOther: 5))
        #expect(other != changes)
        let difference = try #require(changes.firstDifference(from: other))
        #expect(difference.hasPrefix("revision of collection"))
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
