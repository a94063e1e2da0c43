import ChordStoreDomain
@testable import ChordStoreEngine
import Foundation
import LMDB
import Synchronization
import Testing
import TestSupport

/// The views' restore point: after a machine crash, a store's views go back to the
/// restore point the crashed opening took and catch up with the log from there, instead of
/// being rebuilt from the whole log.
@Suite("Views restore point")
struct ViewsRestorePointTests {
    private static func backend(_ store: ChordStore) throws -> LMDBBackend {
        try #require(store.backend as? LMDBBackend)
    }

    private static func views(_ directory: URL) -> URL { directory.appendingPathComponent("views") }

    /// A copy of `original` as a machine crash could leave it: the views marked open by
    /// another boot and, if `zappingPastRestorePoint`, the views' pages past the last page
    /// of the restore point the copy holds overwritten (written after it, never synced).
    /// The restore point is read from the copy, so one taken while copying is the one used.
    private static func crashImage(of original: URL, zappingPastRestorePoint: Bool) throws -> URL {
        let image = temporaryDirectory()
        try? FileManager.default.removeItem(at: image)
        try FileManager.default.copyItem(at: original, to: image)
        if zappingPastRestorePoint {
            let point = try #require(ViewsRestorePoint.read(in: views(image)))
            let handle = try FileHandle(forWritingTo: views(image).appendingPathComponent("data.mdb"))
            let end = try handle.seekToEnd()
            let start = (point.meta.lastPage + 1) * UInt64(point.meta.pageSize)
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

    @Test("views left open by another boot go back to the restore point their opening took and catch up with the log, pages past it lost or not")
    func crashRestoresRestorePoint() async throws {
        let directory = temporaryDirectory()
        var options = ChordStore.Options()
        options.restorePointInterval = nil  // the test takes the restore point
        let store = try ChordStore.open(at: directory, options: options)
        for n in 0..<40 { _ = try await store.add("c\(n)") }
        let covered = try #require(try Self.backend(store).takeRestorePoint())
        #expect(covered == 40)
        try await Self.edit(store, adds: 30)
        let expected = try store.liveSnapshot()
        let point = try #require(ViewsRestorePoint.read(in: Self.views(directory)))
        #expect(point.applied == covered)
        let image = try Self.crashImage(of: directory, zappingPastRestorePoint: true)
        store.close()

        let reopened = try ChordStore.open(at: image)
        defer { reopened.close() }
        let backend = try Self.backend(reopened)
        #expect(backend.viewsRecovery.withLock { $0 } == .restored(applied: covered, logHead: try reopened.lastLogSequence()))
        #expect(reopened.viewsRecovery?.contains("restore point at event 40 and caught up with the log's") == true)
        #expect(backend.viewLoads.load(ordering: .relaxed) == 0, "the views were rebuilt")
        #expect(try reopened.liveSnapshot() == expected)
        #expect(try reopened.verify().isSound)
        try await reopened.execute(.undo, context: CommandContext(session: "s"))  // the undo stacks came back too
        #expect(try reopened.verify().isSound)
    }

    @Test("a restore point an earlier opening took is not used: the views are rebuilt")
    func earlierOpeningsRestorePointIgnored() async throws {
        let directory = temporaryDirectory()
        do {
            let store = try ChordStore.open(at: directory)
            for n in 0..<20 { _ = try await store.add("c\(n)") }
            #expect(try Self.backend(store).takeRestorePoint() == 20)
            store.close()
        }
        var options = ChordStore.Options()
        options.restorePointInterval = nil  // this opening takes none
        let store = try ChordStore.open(at: directory, options: options)
        try await Self.edit(store, adds: 10)
        let expected = try store.liveSnapshot()
        let image = try Self.crashImage(of: directory, zappingPastRestorePoint: false)
        store.close()

        let reopened = try ChordStore.open(at: image)
        defer { reopened.close() }
        let backend = try Self.backend(reopened)
        #expect(backend.viewsRecovery.withLock { $0 } == .unusable(why: "views/restore-point is an earlier opening's"))
        #expect(backend.viewLoads.load(ordering: .relaxed) == 1)
        #expect(try reopened.liveSnapshot() == expected)
        #expect(try reopened.verify().isSound)
    }

    @Test("the syncer takes a restore point when the store opens, after its event threshold at once, and after its interval")
    func syncerTakesRestorePoints() async throws {
        var options = ChordStore.Options()
        options.restorePointInterval = .seconds(3_600)
        options.restorePointEvents = 10
        let store = try ChordStore.open(at: temporaryDirectory(), options: options)
        defer { store.close() }
        let backend = try Self.backend(store)
        #expect(try await Self.eventually { backend.restorePoints.load(ordering: .relaxed) == 1 })
        for n in 0..<12 { _ = try await store.add("c\(n)") }
        #expect(try await Self.eventually { (ViewsRestorePoint.read(in: backend.viewsEnv.directory)?.applied ?? 0) >= 10 })

        var timed = ChordStore.Options()
        timed.restorePointInterval = .milliseconds(20)
        let other = try ChordStore.open(at: temporaryDirectory(), options: timed)
        defer { other.close() }
        let otherBackend = try Self.backend(other)
        _ = try await other.add("one")
        #expect(try await Self.eventually { ViewsRestorePoint.read(in: otherBackend.viewsEnv.directory)?.applied == 1 })
        // Idle: no commit, no restore point. (The count is read under the lock a restore
        // point is written and counted under: the one just seen is counted.)
        let taken = otherBackend.pinnedViews.withLock { _ in otherBackend.restorePoints.load(ordering: .relaxed) }
        try await Task.sleep(for: .milliseconds(200))
        #expect(otherBackend.restorePoints.load(ordering: .relaxed) == taken)
    }

    @Test("a rebuild removes the restore point and takes none while it runs; they resume after it")
    func rebuildSuspends() async throws {
        let directory = temporaryDirectory()
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        for n in 0..<10 { _ = try await store.add("c\(n)") }
        let backend = try Self.backend(store)
        #expect(backend.takeRestorePoint() == 10)
        let file = ViewsRestorePoint.file(in: Self.views(directory))
        #expect(FileManager.default.fileExists(atPath: file.path))
        try backend.suspendRestorePoints()
        #expect(!FileManager.default.fileExists(atPath: file.path), "the views before the rebuild could come back")
        #expect(backend.takeRestorePoint() == nil)
        backend.resumeRestorePoints()
        try await store.rebuild()
        #expect(backend.takeRestorePoint() == 10)
        #expect(ViewsRestorePoint.read(in: Self.views(directory))?.applied == 10)
    }

    @Test("with live state no restore point is taken (the views take no commit): a machine crash loads the state saved last in the background and replays the log after it")
    func liveStateRestorePoint() async throws {
        let directory = temporaryDirectory()
        var options = ChordStore.Options()
        options.liveState = true
        options.restorePointInterval = .seconds(3_600)
        options.restorePointEvents = 25
        options.liveStateSaveEvents = 25
        let store = try ChordStore.open(at: directory, options: options)
        let backend = try Self.backend(store)
        #expect(backend.viewsSyncer.withLock { $0 } == nil)
        for n in 0..<60 { _ = try await store.add("c\(n)") }
        let saver = try #require(backend.saverSlot.withLock { $0 })
        #expect(try await Self.eventually { saver.saves >= 1 })
        try await Self.edit(store, adds: 5)
        let expected = try store.liveSnapshot()
        #expect(ViewsRestorePoint.read(in: Self.views(directory)) == nil)
        // As a machine crash leaves it: the files as they are, the views open in another
        // boot (the saver stopped first, so that no save renames a file under the copy).
        saver.stop()
        let image = try Self.crashImage(of: directory, zappingPastRestorePoint: false)
        store.close()

        let reopened = try ChordStore.open(at: image, options: options)
        defer { reopened.close() }
        guard case .saved(let at, let replayed)? = try Self.backend(reopened).liveStart.withLock({ $0 }) else {
            Issue.record("not loaded from a saved state: \(String(describing: reopened.liveStateStart))")
            return
        }
        #expect(at >= 25)
        #expect(at + replayed == 91)  // 60 adds, then the edits' 31 events
        // The views were not rebuilt: the start did not need them.
        #expect(try Self.backend(reopened).viewLoads.load(ordering: .relaxed) == 0)
        #expect(try reopened.liveSnapshot() == expected)
        #expect(try reopened.verify().isSound)
    }

    @Test("the restore point file of the first version with them (Tests/Fixtures/restore-point1) still reads, as it was written")
    func fixtureReads() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/restore-point1/restore-point")
        let bytes = Array(try Data(contentsOf: file))
        let point = try #require(ViewsRestorePoint(bytes: bytes))
        #expect(point.opening == "8ebd74c008fb26c3")
        #expect(point.applied == 3)
        #expect(point.meta.pageSize == 4_096)
        #expect(point.meta.lastPage == 47)
        #expect(point.meta.transactionID == 21)
        #expect(point.encoded == bytes)
    }

    @Test("a restore point file reads back; a changed byte or a short file reads as none")
    func fileRoundTrip() throws {
        let directory = temporaryDirectory()
        let store = try ChordStore.open(at: directory)
        _ = try Self.backend(store).takeRestorePoint()
        store.close()
        let file = ViewsRestorePoint.file(in: Self.views(directory))
        let bytes = Array(try Data(contentsOf: file))
        let point = try #require(ViewsRestorePoint(bytes: bytes))
        #expect(point.encoded == bytes)
        for offset in [0, 9, 30, 40, bytes.count - 1] {
            var changed = bytes
            changed[offset] ^= 0x01
            #expect(ViewsRestorePoint(bytes: changed) == nil, "byte \(offset)")
        }
        #expect(ViewsRestorePoint(bytes: Array(bytes.dropLast())) == nil)
    }

    @Test("a restore point file that a full disk keeps from being written fails as DISK_FULL, leaves the file before it as it was, and no new file behind",
          .enabled(if: ScratchFilesystem.isAvailable, "mounting a tmpfs needs root"))
    func fullDiskLeavesTheFileBeforeAndNoNewOne() throws {
        let disk = try ScratchFilesystem(megabytes: 1)
        defer { disk.unmount() }
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try ChordStore.open(at: directory)
            defer { store.close() }
            _ = try Self.backend(store).takeRestorePoint()
        }
        let taken = try #require(ViewsRestorePoint.read(in: Self.views(directory)))
        var renamed = false
        try taken.write(in: disk.directory, renamed: &renamed)
        // Then the disk fills up: a later restore point finds no room.
        _ = try disk.ballast("filler", bytes: disk.freeBytes)
        let later = ViewsRestorePoint(opening: taken.opening, applied: taken.applied + 1, meta: taken.meta)
        renamed = false
        let error = #expect(throws: ChordStoreError.self) { try later.write(in: disk.directory, renamed: &renamed) }
        #expect(error?.reason == .diskFull)
        #expect(!renamed)
        #expect(ViewsRestorePoint.read(in: disk.directory) == taken)
        #expect(!FileManager.default.fileExists(atPath: disk.directory.appendingPathComponent("restore-point.new").path))
    }

    @Test("a restore point a full disk keeps from being written is said once to the one told (Options.warn), and again after one was written")
    func fullDiskWarnsOnce() async throws {
        let disk = try ScratchFilesystem(megabytes: 24)
        defer { disk.unmount() }
        var ballasts: [URL] = []
        // Fills the disk to the last block (a failed restore point frees the blocks of
        // the one it removes).
        func fill() throws { ballasts.append(try disk.ballast("ballast\(ballasts.count)", bytes: disk.freeBytes)) }
        func empty() throws {
            for ballast in ballasts { try FileManager.default.removeItem(at: ballast) }
            ballasts = []
        }
        let told = Mutex<[String]>([])
        var options = ChordStore.Options()
        options.restorePointInterval = nil  // the test takes the restore points
        options.warn = { message in told.withLock { $0.append(message) } }
        let store = try ChordStore.open(at: disk.directory.appendingPathComponent("data"), options: options)
        defer { store.close() }
        let backend = try Self.backend(store)
        _ = try await store.add("first")
        #expect(backend.takeRestorePoint() == 1)
        _ = try await store.add("second")

        try fill()
        #expect(backend.takeRestorePoint() == nil)
        #expect(told.withLock { $0 }.count == 1)
        #expect(told.withLock { $0 }.first?.hasPrefix("a restore point of the views could not be written (the disk is full") == true, "\(told.withLock { $0 })")
        try fill()
        #expect(backend.takeRestorePoint() == nil)
        #expect(told.withLock { $0 }.count == 1, "said once while it keeps failing")

        try empty()
        #expect(backend.takeRestorePoint() == 2)
        _ = try await store.add("third")
        try fill()
        #expect(backend.takeRestorePoint() == nil)
        #expect(told.withLock { $0 }.count == 2, "said again after a restore point was written")
        try empty()
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
