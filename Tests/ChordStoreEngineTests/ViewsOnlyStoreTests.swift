import ChordStoreDomain
@testable import ChordStoreEngine
import Foundation
import LMDB
import Synchronization
import Testing

/// A store over a copy's views alone (``ChordStore/openViews(at:options:)``): what a new
/// follower serves while its copy of the log arrives. It reads as the source did at the
/// copy; whatever needs the log, and every write, is refused; the files stay as they came.
@Suite("A store over a copy's views alone")
struct ViewsOnlyStoreTests {
    @Test("reads of the current state match the source's at the copy, in every store; what needs the log and every write is refused; not a byte of the views changes (a source with views, then with live state)", arguments: [false, true])
    func readsWithoutTheLog(live: Bool) async throws {
        var options = ChordStore.Options()
        options.liveState = live
        let source = try ChordStore.open(at: temporaryDirectory(), options: options)
        defer { source.close() }
        // With live state the views take no commit: the copy brings them to the log.
        _ = try await source.createStore("other")
        var renamed: Chordset?
        for index in 0..<40 {
            let chordset = try await source.add("chordset \(index)")
            if index == 7 {
                try await source.execute(.renameChordset(id: chordset.id, title: "renamed"))
                renamed = chordset
            }
        }
        _ = try await source.execute(.addChordset(AddChordset(title: "elsewhere")), context: CommandContext(store: "other"))
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // As a bootstrap takes them: the views through the page cache, synced at the end.
        let receiver = try BackupReceiver(directory: directory, cachedViews: true)
        try await source.copyFiles { try receiver.take($0) }
        let manifest = try receiver.finish(node: "test", started: Date())
        let profile = try source.profile()
        // Written after the copy: the views-only store does not have it.
        _ = try await source.add("after the copy")

        let views = try ChordStore.openViews(at: directory.appendingPathComponent("views"))
        let expected = manifest.files[0]
        do {
            defer { views.close() }
            #expect(try views.lastLogSequence() == manifest.logSequence)
            #expect(try views.profile() == profile)
            let titles = try views.chordsets(order: .creationDate, limit: nil).map(\.title)
            #expect(titles.count == 40 && titles[7] == "renamed" && titles[39] == "chordset 39", "\(titles)")
            #expect(try views.chordset(renamed!.id)?.title == "renamed")
            #expect(try views.chordsets(order: .creationDate, limit: nil, store: "other").map(\.title) == ["elsewhere"])

            // What reads the log: refused, saying why.
            let refusals: [(String, () throws -> Void)] = [
                ("history", { _ = try views.history(chordset: renamed!.id) }),
                ("as-of", { _ = try views.state(asOf: .sequence(3)) }),
                ("events", { _ = try views.events(from: 1) }),
                ("verify", { _ = try views.verify() }),
            ]
            for (what, read) in refusals {
                #expect("\(what)") { try read() } throws: { error in
                    let error = error as? ChordStoreError
                    return error?.code == .unavailable && error?.message.contains("still receiving its copy of the leader's log") == true
                }
            }
            await #expect { try await views.copyFiles { _ in } } throws: { error in (error as? ChordStoreError)?.code == .unavailable }
            #expect(views.logAbsence?.code == .unavailable)
            // A feed from now on reads nothing of the log: it waits, as on any follower.
            #expect(try views.events(from: profile.lastSequence + 1).isEmpty)
            // Writes: refused as on any follower.
            await #expect { _ = try await views.add("refused") } throws: { error in
                let error = error as? ChordStoreError
                return error?.code == .failedPrecondition && error?.reason == .notLeader
            }
            #expect(views.writeRefusal?.code == .unavailable)
        }
        // Read-only: the file is still the one that arrived.
        let url = directory.appendingPathComponent(BackupFiles.views)
        var digest = BlockDigest()
        let bytes = try Data(contentsOf: url)
        for start in stride(from: 0, to: bytes.count, by: BlockDigest.blockSize) {
            bytes[start..<min(start + BlockDigest.blockSize, bytes.count)].withUnsafeBytes { digest.update($0) }
        }
        #expect(BackupManifest.File(name: expected.name, bytes: digest.count, digest: digest.value) == expected)
        // And the copy restores and verifies as any other.
        let restored = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: restored) }
        try ChordStore.restore(backup: directory, into: restored)
        let store = try ChordStore.open(at: restored)
        defer { store.close() }
        #expect(try store.verify().isSound)
    }

    @Test("views of a layout this build does not read are refused, naming the layout and those it reads")
    func otherLayout() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try ChordStore.open(at: directory).close()
        let views = directory.appendingPathComponent("views")
        do {
            var options = Environment.Options()
            options.maxDatabases = 32
            let environment = try Environment(directory: views, options: options)
            defer { environment.close() }
            let dbs = try StoreDatabases(readOnlyViews: environment)
            try environment.withWriteTransaction { txn in try txn.put(dbs.meta, key: StoreDatabases.viewsKey, value: [UInt8(99)]) }
        }
        let reads = LMDBBackend.readableViewsVersions.sorted().map(String.init).joined(separator: " and ")
        #expect {
            _ = try ChordStore.openViews(at: views)
        } throws: { error in
            (error as? ChordStoreError)?.code == .failedPrecondition && "\(error)".contains("have layout 99, which this chordstore does not read (it reads \(reads))")
        }
    }

    @Test("a directory without views is refused, naming it")
    func noViews() throws {
        let directory = temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect {
            _ = try ChordStore.openViews(at: directory)
        } throws: { error in
            (error as? ChordStoreError)?.code == .notFound && "\(error)".contains(directory.path)
        }
    }
}
