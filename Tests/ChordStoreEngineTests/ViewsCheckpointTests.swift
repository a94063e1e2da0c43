import ChordStoreDomain
@testable import ChordStoreEngine
import Foundation
import LMDB
import Synchronization
import Testing

/// The views' durable checkpoint: after a machine crash, a store's views go back to the
/// checkpoint the crashed opening took and catch up with the log from there, instead of
/// being rebuilt from the whole log.
@Suite("Views checkpoint")
struct ViewsCheckpointTests {
    private static func backend(_ store: ChordStore) throws -> LMDBBackend {
        try #require(store.backend as? LMDBBackend)
    }

    private static func views(_ directory: URL) -> URL { directory.appendingPathComponent("views") }

    /// What a machine crash leaves of a store that was open in `original`: its files as
    /// they are (the store still open), copied to a new directory; then every page of the
    /// views past the last one of their checkpoint's state overwritten (pages the disk
    /// never got), and `views/open` naming another boot (the opening's id kept).
    private static func crashImage(of original: URL, lastPage: UInt64?, pageSize: Int) throws -> URL {
        let image = temporaryDirectory()
        try? FileManager.default.removeItem(at: image)
        try FileManager.default.copyItem(at: original, to: image)
        if let lastPage {
            let handle = try FileHandle(forWritingTo: views(image).appendingPathComponent("data.mdb"))
            let end = try handle.seekToEnd()
            let start = (lastPage + 1) * UInt64(pageSize)
            if end > start {
                try handle.seek(toOffset: start)
                handle.write(Data(repeating: 0x5A, count: Int(end - start)))
            }
            try handle.close()
        }
        let marker = views(image).appendingPathComponent("open")
        let words = try String(contentsOf: marker, encoding: .utf8).split(separator: " ", omittingEmptySubsequences: true)
        let text = (["another-boot"] + words.dropFirst().map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }).joined(separator: " ")
        try text.write(to: marker, atomically: true, encoding: .utf8)
        return image
    }

    /// Renames, deletes, an undo and adds: commits that rewrite and free the pages of
    /// the state before them.
    private static func edit(_ store: ChordStore, adds: Int) async throws {
        let context = CommandContext(session: "s")
        for (n, chordset) in try store.chordsets().prefix(10).enumerated() {
            try await store.execute(.renameChordset(id: chordset.id, title: "renamed \(n)"), context: context)
            try await store.execute(.setChordBPM(chordID: chordset.chords[n % 8].id, bpm: Double(70 + n)), context: context)
        }
        for chordset in try store.chordsets().suffix(5) { try await store.execute(.deleteChordset(id: chordset.id), context: context) }
        try await store.execute(.undo, context: context)
        for n in 0..<adds { _ = try await store.add("late \(n)") }
    }

    @Test("views left open by another boot go back to the checkpoint their opening took and catch up with the log, pages past it lost or not")
    func crashRestoresCheckpoint() async throws {
        let directory = temporaryDirectory()
        var options = ChordStore.Options()
        options.viewsSyncInterval = nil  // the test takes the checkpoint
        let store = try ChordStore.open(at: directory, options: options)
        for n in 0..<40 { _ = try await store.add("c\(n)") }
        let covered = try #require(try Self.backend(store).takeViewsCheckpoint())
        #expect(covered == 40)
        try await Self.edit(store, adds: 30)
        let expected = try store.liveSnapshot()
        let checkpoint = try #require(ViewsCheckpoint.read(in: Self.views(directory)))
        #expect(checkpoint.applied == covered)
        let image = try Self.crashImage(of: directory, lastPage: checkpoint.meta.lastPage, pageSize: checkpoint.meta.pageSize)
        store.close()

        let reopened = try ChordStore.open(at: image)
        defer { reopened.close() }
        let backend = try Self.backend(reopened)
        #expect(backend.viewsRecovery == .restored(applied: covered, logHead: try reopened.lastLogSequence()))
        #expect(reopened.viewsRecovery?.contains("checkpoint at event 40 and caught up with the log's") == true)
        #expect(backend.viewLoads.load(ordering: .relaxed) == 0, "the views were rebuilt")
        #expect(try reopened.liveSnapshot() == expected)
        #expect(try reopened.verify().isSound)
        try await reopened.execute(.undo, context: CommandContext(session: "s"))  // the undo stacks came back too
        #expect(try reopened.verify().isSound)
    }

    @Test("a checkpoint an earlier opening took is not used: the views are rebuilt")
    func earlierOpeningsCheckpointIgnored() async throws {
        let directory = temporaryDirectory()
        do {
            let store = try ChordStore.open(at: directory)
            for n in 0..<20 { _ = try await store.add("c\(n)") }
            #expect(try Self.backend(store).takeViewsCheckpoint() == 20)
            store.close()
        }
        var options = ChordStore.Options()
        options.viewsSyncInterval = nil  // this opening takes none
        let store = try ChordStore.open(at: directory, options: options)
        try await Self.edit(store, adds: 10)
        let expected = try store.liveSnapshot()
        let image = try Self.crashImage(of: directory, lastPage: nil, pageSize: 0)
        store.close()

        let reopened = try ChordStore.open(at: image)
        defer { reopened.close() }
        let backend = try Self.backend(reopened)
        #expect(backend.viewsRecovery == .unusable(why: "views/checkpoint is an earlier opening's"))
        #expect(backend.viewLoads.load(ordering: .relaxed) == 1)
        #expect(try reopened.liveSnapshot() == expected)
        #expect(try reopened.verify().isSound)
    }

    @Test("the syncer takes a checkpoint when the store opens, after its event threshold at once, and after its interval")
    func syncerTakesCheckpoints() async throws {
        var options = ChordStore.Options()
        options.viewsSyncInterval = .seconds(3_600)
        options.viewsSyncEvents = 10
        let store = try ChordStore.open(at: temporaryDirectory(), options: options)
        defer { store.close() }
        let backend = try Self.backend(store)
        #expect(try await Self.eventually { backend.viewsCheckpoints.load(ordering: .relaxed) == 1 })
        for n in 0..<12 { _ = try await store.add("c\(n)") }
        #expect(try await Self.eventually { (ViewsCheckpoint.read(in: backend.viewsEnv.directory)?.applied ?? 0) >= 10 })

        var timed = ChordStore.Options()
        timed.viewsSyncInterval = .milliseconds(20)
        let other = try ChordStore.open(at: temporaryDirectory(), options: timed)
        defer { other.close() }
        let otherBackend = try Self.backend(other)
        _ = try await other.add("one")
        #expect(try await Self.eventually { ViewsCheckpoint.read(in: otherBackend.viewsEnv.directory)?.applied == 1 })
        // Idle: no commit, no checkpoint.
        let taken = otherBackend.viewsCheckpoints.load(ordering: .relaxed)
        try await Task.sleep(for: .milliseconds(200))
        #expect(otherBackend.viewsCheckpoints.load(ordering: .relaxed) == taken)
    }

    @Test("a checkpoint file reads back; a changed byte or a short file reads as none")
    func fileRoundTrip() throws {
        let directory = temporaryDirectory()
        let store = try ChordStore.open(at: directory)
        _ = try Self.backend(store).takeViewsCheckpoint()
        store.close()
        let file = ViewsCheckpoint.file(in: Self.views(directory))
        let bytes = Array(try Data(contentsOf: file))
        let checkpoint = try #require(ViewsCheckpoint(bytes: bytes))
        #expect(checkpoint.encoded == bytes)
        for offset in [0, 9, 30, 40, bytes.count - 1] {
            var changed = bytes
            changed[offset] ^= 0x01
            #expect(ViewsCheckpoint(bytes: changed) == nil, "byte \(offset)")
        }
        #expect(ViewsCheckpoint(bytes: Array(bytes.dropLast())) == nil)
    }

    /// Waits up to 10 s for `condition`.
    private static func eventually(_ condition: () throws -> Bool) async throws -> Bool {
        for _ in 0..<1_000 {
            if try condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return try condition()
    }
}
