import ChordStoreDomain
import ChordStoreReplica
import ChordStoreReplicaFormat1
import Foundation
import Testing

/// Golden fixtures of every on-disk format: a data directory each format's chordstore
/// wrote (Tests/Fixtures/formatN), and what that chordstore printed when reading it
/// (Tests/Fixtures/formatN-expected). Every later version must open it and print the
/// same, in store `default`; a format change adds its own fixture (docs/STORAGE.md).
@Suite("On-disk format fixtures")
struct FormatFixtureTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// A copy of the fixture to work on (opening upgrades it in place).
    private func copy(_ name: String) throws -> String {
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("chordstore-fixture-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: Self.fixtures.appendingPathComponent(name), to: target)
        return target.path
    }

    private func expected(_ file: String, _ format: String = "format2") throws -> String {
        try String(contentsOf: Self.fixtures.appendingPathComponent("\(format)-expected/\(file)"), encoding: .utf8)
    }

    /// What `dump` of make-format2.sh prints, file name → output.
    private func dump(_ data: String) async throws -> [String: String] {
        var out: [String: String] = [:]
        func run(_ file: String, _ arguments: [String]) async throws {
            let result = try await runChordstore(["--data", data] + arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            out[file] = result.stdout
        }
        try await run("list.json", ["--json", "list"])
        try await run("list-title.json", ["--json", "list", "--sort", "title"])
        try await run("list-index.json", ["--json", "list", "--sort", "index"])
        try await run("profile.json", ["--json", "profile"])
        try await run("log.json", ["--json", "log"])
        try await run("list-asof6.json", ["--json", "list", "--as-of", "6"])
        for session in ["alice", "bob"] { try await run("session-\(session).json", ["--session", session, "--json", "session"]) }
        for letter in ["a", "b", "c", "d"] {
            try await run("history-\(letter).json", ["--json", "history", "0195a3c1-0000-7000-8000-00000000000\(letter)"])
        }
        return out
    }

    /// JSON with the commit times, checksums and command ids of events after `after`
    /// removed: events written while the test runs have their own.
    private func normalized(_ text: String, after: Int) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard let data = line.data(using: .utf8), var object = try? JSONSerialization.jsonObject(with: data) else { return String(line) }
            object = strip(object, after: after)
            return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? String(line)
        }.joined(separator: "\n")
    }

    private func strip(_ value: Any, after: Int) -> Any {
        if let array = value as? [Any] { return array.map { strip($0, after: after) } }
        guard var object = value as? [String: Any] else { return value }
        if let sequence = (object["sequence"] as? String).flatMap(Int.init), sequence > after, object["epoch"] != nil {
            object["timestamp"] = nil
            object["checksum"] = nil
            object["commandId"] = nil
        }
        for (key, inner) in object { object[key] = strip(inner, after: after) }
        return object
    }

    @Test("a format 2 data directory (before stores) opens with the same chordsets, history, sessions and undo, in store default")
    func format2() async throws {
        let data = try copy("format2")
        let opened = try await dump(data)
        for (file, output) in opened.sorted(by: { $0.key < $1.key }) {
            #expect(output == (try expected("open-\(file)")), "open-\(file) differs")
        }
        // The same undo and redo as the old binary did, with the same answers.
        let alice = try await runChordstore(["--data", data, "--session", "alice", "undo"])
        #expect(alice.status == 1)
        #expect(alice.stderr.trimmingCharacters(in: .whitespacesAndNewlines) == (try expected("undo-alice.json")).trimmingCharacters(in: .whitespacesAndNewlines))
        for (file, arguments) in [("undo-bob.json", ["--session", "bob", "--json", "undo"]), ("redo-bob.json", ["--session", "bob", "--json", "redo"])] {
            let result = try await runChordstore(["--data", data] + arguments)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(normalized(result.stdout, after: 17) == normalized(try expected(file), after: 17), "\(file) differs")
        }
        let after = try await dump(data)
        for (file, output) in after.sorted(by: { $0.key < $1.key }) {
            #expect(normalized(output, after: 17) == normalized(try expected("after-\(file)"), after: 17), "after-\(file) differs")
        }
        // It now holds the current format and passes verify; it is store default of the list.
        let verify = try await runChordstore(["--data", data, "verify"])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        let stores = try await runChordstore(["--data", data, "store", "list"])
        #expect(stores.stdout.hasPrefix("default  3 chordsets, 25 chords, last event 19"), "\(stores.stdout)")
    }

    @Test("a format 3 data directory (stores, before tokens) opens with the same chordsets, stores, history and undo")
    func format3() async throws {
        let data = try copy("format3")
        var opened = try await dump(data)
        opened.merge(try await storeDump(data)) { a, _ in a }
        for (file, output) in opened.sorted(by: { $0.key < $1.key }) {
            #expect(output == (try expected("open-\(file)", "format3")), "format3 open-\(file) differs")
        }
        // Alice's last change was the add after the stores: undone, as the old binary did.
        let alice = try await runChordstore(["--data", data, "--session", "alice", "undo"])
        #expect(alice.status == 0, "\(alice.stderr)")
        #expect(alice.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == (try expected("undo-alice.json", "format3")).trimmingCharacters(in: .whitespacesAndNewlines))
        for (file, arguments) in [("undo-bob.json", ["--session", "bob", "--json", "undo"]), ("redo-bob.json", ["--session", "bob", "--json", "redo"])] {
            let result = try await runChordstore(["--data", data] + arguments)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(normalized(result.stdout, after: 18) == normalized(try expected(file, "format3"), after: 18), "format3 \(file) differs")
        }
        var after = try await dump(data)
        after.merge(try await storeDump(data)) { a, _ in a }
        for (file, output) in after.sorted(by: { $0.key < $1.key }) where !file.hasPrefix("stores") {
            #expect(normalized(output, after: 18) == normalized(try expected("after-\(file)", "format3"), after: 18), "format3 after-\(file) differs")
        }
        let verify = try await runChordstore(["--data", data, "verify"])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
    }

    @Test("a replica of format 1 opened without a format 1 reader (as an app for iOS builds) is refused, its files untouched")
    func replica1WithoutReader() async throws {
        let device = URL(fileURLWithPath: try copy("replica1"))
        let before = try Data(contentsOf: device.appendingPathComponent("data.mdb"))
        let refusal = await #expect(throws: ReplicaError.self) { _ = try await Replica.open(at: device) }
        #expect(refusal?.code == .formatNeedsMove, "\(String(describing: refusal))")
        #expect(refusal?.statusCode == .failedPrecondition)
        #expect(try Data(contentsOf: device.appendingPathComponent("data.mdb")) == before)
        let files = try FileManager.default.contentsOfDirectory(atPath: device.path)
        #expect(!files.contains("queue.sqlite") && !files.contains("events.sqlite"), "\(files)")
        // With the reader, the same directory opens (and is moved).
        let moved = try await Replica.open(at: device, options: .movingFormat1)
        #expect(moved.pendingWrites.count == 2)
        moved.close()
    }

    @Test(
        "a device replica of each format (1: LMDB, moved to SQLite on open; 2: SQLite) opens with the same view and its pending writes",
        arguments: ["replica1", "replica2"])
    func replica(_ fixture: String) async throws {
        let device = try copy(fixture)
        if fixture == "replica1" {
            // A move killed half-way left its new files behind: the next open moves again.
            for file in ["moving-queue.sqlite", "moving-events.sqlite"] {
                try Data("half-written".utf8).write(to: URL(fileURLWithPath: device).appendingPathComponent(file))
            }
        }
        let list = try await runChordstore(["replica", "--dir", device, "--json", "list"])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout == (try expected("list.json", fixture)))
        let status = try await runChordstore(["replica", "--dir", device, "status"])
        let lines = status.stdout.split(separator: "\n").filter { !$0.hasPrefix("  ") && !$0.hasPrefix("session") }
        #expect(lines.joined(separator: "\n") + "\n" == (try expected("status.txt", fixture)))
        // Format 1 was moved: its LMDB files are gone, the SQLite ones hold everything.
        let files = try FileManager.default.contentsOfDirectory(atPath: device)
        #expect(files.contains("queue.sqlite") && files.contains("events.sqlite") && !files.contains("data.mdb"), "\(files)")
        let dataFile = URL(fileURLWithPath: device).appendingPathComponent("data.mdb")
        if fixture == "replica1" {
            // The move's own leftovers (it stopped before removing them) are removed.
            try FileManager.default.copyItem(at: Self.fixtures.appendingPathComponent("replica1/data.mdb"), to: dataFile)
            #expect(try await runChordstore(["replica", "--dir", device, "status"]).status == 0)
            #expect(!FileManager.default.fileExists(atPath: dataFile.path))
            #expect(!FileManager.default.fileExists(atPath: device + "/format1-left-data.mdb"))
        } else {
            // Format 1 files an older version wrote beside format 2 are set aside, not read.
            try FileManager.default.copyItem(at: Self.fixtures.appendingPathComponent("replica1/data.mdb"), to: dataFile)
            let status = try await runChordstore(["replica", "--dir", device, "status"])
            #expect(status.status == 0 && status.stderr.contains("format1-left-data.mdb"), "\(status.stderr)")
            #expect(FileManager.default.fileExists(atPath: device + "/format1-left-data.mdb"))
        }
        // Its server is gone: a new server's store `songs` is another store, refused as such,
        // and the pending writes stay.
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("chordstore-fixture-\(UUID().uuidString)")
        let (server, port, _) = try await ServerCrashTests.serve(data)
        defer { server.terminate() }
        #expect(try await runChordstore(["store", "create", "songs", "--server", "127.0.0.1:\(port)"]).status == 0)
        for _ in 0..<3 { _ = try await runChordstore(["--store", "songs", "add", "other", "--server", "127.0.0.1:\(port)"]) }
        let sync = try await runChordstore(["replica", "--dir", device, "sync", "--server", "127.0.0.1:\(port)"])
        #expect(sync.status == 1)
        #expect(sync.stderr.contains("FAILED_PRECONDITION: store songs on the server is not the one this replica copied"))
        #expect(try await runChordstore(["replica", "--dir", device, "status"]).stdout.contains("pending: 2"))
    }

    /// What make-format3.sh adds to `dump`: store `songs` and the list of stores.
    private func storeDump(_ data: String) async throws -> [String: String] {
        var out: [String: String] = [:]
        for (file, arguments) in [
            ("songs-list.json", ["--store", "songs", "--json", "list"]), ("songs-log.json", ["--store", "songs", "--json", "log"]),
            ("songs-session-carol.json", ["--store", "songs", "--session", "carol", "--json", "session"]),
            ("stores.json", ["--json", "store", "list"]),
        ] {
            let result = try await runChordstore(["--data", data] + arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            out[file] = result.stdout
        }
        return out
    }
}
