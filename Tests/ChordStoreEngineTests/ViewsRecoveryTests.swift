import ChordStoreDomain
import ChordStoreEngine
import Foundation
import LMDB
import Testing

/// The views live in their own environment (`views/`), written without fsync after the
/// log's durable commit: what a store does when it opens with views it cannot take as
/// they are.
@Suite("Views recovery")
struct ViewsRecoveryTests {
    /// The machine's boot id, as the store records it in `views/open`.
    private static var bootID: String {
        (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "unknown"
    }

    private static func copyViews(of directory: URL, to copy: URL) throws {
        try? FileManager.default.removeItem(at: copy)
        try FileManager.default.copyItem(at: directory.appendingPathComponent("views"), to: copy)
    }

    /// Plants command id "probe" → event 1 in the views at `views`: a catch-up keeps it,
    /// a rebuild (which reloads the command ids from the log) drops it.
    private static func plantProbe(inViews views: URL) throws {
        let env = try Environment(directory: views)
        let commands = try env.openDatabase("commands")
        try env.withWriteTransaction { txn in
            // Store `default`'s keys start with its id, 0, as 4 bytes.
            try txn.put(commands, key: [0, 0, 0, 0] + Array("probe".utf8), value: withUnsafeBytes(of: UInt64(1).bigEndian) { Array($0) })
        }
    }

    /// Whether the views still hold the planted probe: a command sent with its id is
    /// refused as a reuse of event 1's id instead of being recorded.
    private static func probeKept(_ store: ChordStore) async throws -> Bool {
        let first = try #require(try store.chordsets().first)
        do {
            try await store.execute(.renameChordset(id: first.id, title: "probe"), context: CommandContext(commandID: "probe"))
            return false
        } catch {
            guard error.code == .failedPrecondition, error.message.contains("event 1") else { throw error }
            return true
        }
    }

    private static func restoreViews(of directory: URL, from copy: URL) throws {
        let views = directory.appendingPathComponent("views")
        try FileManager.default.removeItem(at: views)
        try FileManager.default.copyItem(at: copy, to: views)
    }

    @Test("views a few events behind the log (the process died between the two commits) are caught up when the store opens")
    func lagCaughtUp() async throws {
        let directory = temporaryDirectory()
        let early = temporaryDirectory()
        let expected: StateSnapshot
        do {
            let store = try ChordStore.open(at: directory)
            for i in 0..<20 { _ = try await store.add("c\(i)") }
            store.close()
            try Self.copyViews(of: directory, to: early)
            let reopened = try ChordStore.open(at: directory)
            let first = try reopened.chordsets()[0]
            try await reopened.execute(.renameChordset(id: first.id, title: "renamed"), context: CommandContext(session: "s"))
            try await reopened.execute(.deleteChordset(id: try reopened.chordsets()[3].id), context: CommandContext(session: "s"))
            for i in 0..<5 { _ = try await reopened.add("late \(i)") }
            expected = try reopened.liveSnapshot()
            reopened.close()
        }
        // The views of 20 events beside a log of 27, as a crash of this boot leaves them.
        try Self.restoreViews(of: directory, from: early)
        try Self.plantProbe(inViews: directory.appendingPathComponent("views"))
        try Self.bootID.write(to: directory.appendingPathComponent("views/open"), atomically: true, encoding: .utf8)
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        #expect(try store.liveSnapshot() == expected)
        #expect(try await Self.probeKept(store), "the views were rebuilt, not caught up")
        try await store.execute(.undo, context: CommandContext(session: "s"))  // the undo stacks were caught up too
        #expect(try store.chordsets().count == 25)
        try await store.rebuild()  // drops the probe, which verify would count as damage
        #expect(try store.verify().isSound)
    }

    @Test("views left open by another boot (the machine went down) are discarded and rebuilt from the log")
    func machineCrashRebuilds() async throws {
        let directory = temporaryDirectory()
        let expected: StateSnapshot
        do {
            let store = try ChordStore.open(at: directory)
            for i in 0..<12 { _ = try await store.add("c\(i)") }
            expected = try store.liveSnapshot()
            store.close()
        }
        // Damage the views as lost pages would, and leave the marker of another boot.
        try Self.plantProbe(inViews: directory.appendingPathComponent("views"))
        do {
            let env = try Environment(directory: directory.appendingPathComponent("views"))
            let chordsets = try env.openDatabase("chordsets")
            try env.withWriteTransaction { txn in try txn.empty(chordsets) }
        }
        try "another-boot".write(to: directory.appendingPathComponent("views/open"), atomically: true, encoding: .utf8)
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        #expect(try store.liveSnapshot() == expected)
        #expect(try store.verify().isSound)
        let marker = try String(contentsOf: directory.appendingPathComponent("views/open"), encoding: .utf8)
        #expect(marker.split(separator: " ").first.map(String.init) == Self.bootID, "views/open names this boot, then the opening")
        #expect(try await !Self.probeKept(store), "the views of another boot were used")
    }

    @Test("views that belong to another log are rebuilt; a clean close marks the views closed, in place")
    func foreignViewsRebuilt() async throws {
        let directory = temporaryDirectory()
        let other = temporaryDirectory()
        let expected: StateSnapshot
        do {
            let store = try ChordStore.open(at: directory)
            for i in 0..<8 { _ = try await store.add("mine \(i)") }
            expected = try store.liveSnapshot()
            store.close()
            let foreign = try ChordStore.open(at: other)
            for i in 0..<8 { _ = try await foreign.add("theirs \(i)") }
            foreign.close()
        }
        let marker = directory.appendingPathComponent("views/open")
        #expect(try String(contentsOf: marker, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) == "closed")
        try Self.restoreViews(of: directory, from: other.appendingPathComponent("views"))
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        #expect(try String(contentsOf: marker, encoding: .utf8).split(separator: " ").first.map(String.init) == Self.bootID)
        #expect(try store.liveSnapshot() == expected)
        #expect(try store.verify().isSound)
    }

    @Test("a format 1 store (views inside the log's environment) opens: the old views are dropped and rebuilt in views/")
    func formatOneMigrates() async throws {
        let directory = temporaryDirectory()
        let expected: StateSnapshot
        do {
            let store = try ChordStore.open(at: directory)
            for i in 0..<10 { _ = try await store.add("c\(i)") }
            expected = try store.liveSnapshot()
            store.close()
        }
        // Make it look like format 1: view databases beside the log, no views/ directory.
        do {
            let env = try Environment(directory: directory)
            let meta = try env.openDatabase("meta")
            let chordsets = try env.openDatabase("chordsets")
            try env.withWriteTransaction { txn in
                try txn.put(meta, key: Array("format".utf8), value: [1])
                try txn.put(chordsets, key: [1, 2, 3], value: [4])
            }
        }
        try FileManager.default.removeItem(at: directory.appendingPathComponent("views"))
        do {
            let store = try ChordStore.open(at: directory)
            #expect(try store.liveSnapshot() == expected)
            #expect(try store.verify().isSound)
            store.close()
        }
        let env = try Environment(directory: directory)
        #expect(throws: LMDBError.self) { try env.openDatabase("chordsets", create: false) }
        let meta = try env.openDatabase("meta")
        #expect(try env.withReadTransaction { txn in try txn.get(meta, key: Array("format".utf8)).map(Array.init) } == [4])
    }

    @Test("a format newer than this version is refused with a message naming both, and its files are left as they were")
    func newerFormatRefused() async throws {
        let directory = temporaryDirectory()
        do {
            let store = try ChordStore.open(at: directory)
            _ = try await store.add("kept")
            store.close()
        }
        do {
            let env = try Environment(directory: directory)
            let meta = try env.openDatabase("meta")
            try env.withWriteTransaction { txn in try txn.put(meta, key: Array("format".utf8), value: [9]) }
        }
        let log = directory.appendingPathComponent("data.mdb")
        let views = directory.appendingPathComponent("views/data.mdb")
        let before = (try Data(contentsOf: log), try Data(contentsOf: views))
        let error = #expect(throws: ChordStoreError.self) { try ChordStore.open(at: directory) }
        #expect(error?.code == .failedPrecondition)
        #expect(error?.message.contains("has format 9, newer than this chordstore reads (4)") == true, "\(String(describing: error))")
        #expect(try Data(contentsOf: log) == before.0)
        #expect(try Data(contentsOf: views) == before.1)
    }
}
