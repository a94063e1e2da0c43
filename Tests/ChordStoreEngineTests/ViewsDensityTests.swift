import ChordStoreDomain
import ChordStoreEngine
import Foundation
import LMDB
import Testing

/// The writer's increasing ids keep the views' id-keyed B-trees full: a copy of them (a
/// new follower's, a backup) moves no half-empty pages.
@Suite("Views density")
struct ViewsDensityTests {
    /// The system's page size, LMDB's page size.
    static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    @Test(
        "300 concurrent adds leave the chordsets' pages full (six rows of about 600 bytes each), and the chord index empty (their chords' ids are derived)",
        .enabled(if: pageSize == 4_096, "the page counts are those of 4 KiB pages"))
    func pagesFull() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try ChordStore.open(at: directory)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<300 { group.addTask { _ = try await store.add("c\(i)") } }
            try await group.waitForAll()
        }
        store.close()
        var options = Environment.Options()
        options.readOnly = true
        options.maxDatabases = 32
        let views = try Environment(directory: directory.appendingPathComponent("views"), options: options)
        defer { views.close() }
        let (chordsets, chords) = try views.withReadTransaction { txn in
            (try txn.stat(txn.existingDatabase("chordsets")), try txn.stat(txn.existingDatabase("chords")))
        }
        #expect(chordsets.entries == 300 && chords.entries == 0)
        // 50 leaf pages and a branch page; splits without MDB_APPEND took 61, and ids in
        // random order within a millisecond leave pages about two thirds full.
        #expect(chordsets.pages <= 52, "\(chordsets.pages) pages for 300 chordsets")
    }
}
