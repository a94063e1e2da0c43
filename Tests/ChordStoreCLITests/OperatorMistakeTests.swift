import ChordStoreDomain
import ChordStoreEngine
import CoreFoundation
import Foundation
import Testing

/// What an operator's mistakes with the data verbs do: each is refused with a message
/// that says what is wrong, and leaves nothing half-made behind.
@Suite("Operator mistakes with backup, restore, export, import and verify")
struct OperatorMistakeTests {
    static func directory(_ name: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
    }

    /// A data directory with stores `a` (2 events) and `b` (3 events), and their exports.
    private func twoStores() async throws -> (data: URL, a: URL, b: URL) {
        let data = Self.directory("mistakes")
        for (store, titles) in [("a", ["a1", "a2"]), ("b", ["b1", "b2", "b3"])] {
            #expect(try await runChordstore(["--data", data.path, "store", "create", store]).status == 0)
            for title in titles { #expect(try await runChordstore(["--data", data.path, "--store", store, "add", title]).status == 0) }
        }
        let a = data.appendingPathComponent("a.jsonl"), b = data.appendingPathComponent("b.jsonl")
        #expect(try await runChordstore(["--data", data.path, "--store", "a", "export", "--out", a.path]).status == 0)
        #expect(try await runChordstore(["--data", data.path, "--store", "b", "export", "--out", b.path]).status == 0)
        return (data, a, b)
    }

    private func stores(_ data: URL) async throws -> String {
        try await runChordstore(["--data", data.path, "store", "list"]).stdout
    }

    @Test("import --resume with another file than the interrupted one is refused; a refused import leaves no store; CRLF lines import")
    func importMistakes() async throws {
        let (data, a, b) = try await twoStores()
        defer { try? FileManager.default.removeItem(at: data) }
        #expect(try await runChordstore(["--data", data.path, "--store", "x", "import", a.path]).status == 0)
        let other = try await runChordstore(["--data", data.path, "--store", "x", "import", "--resume", b.path])
        #expect(other.status == 1 && other.stderr.contains("--resume goes on only with the file whose import was interrupted"), "\(other.stderr)")
        let same = try await runChordstore(["--data", data.path, "--store", "x", "import", "--resume", a.path])
        #expect(same.status == 0 && same.stdout.contains("imported 0 events"), "\(same.stdout)\(same.stderr)")

        // Refused by the store (a time far ahead of the clock): the store it made goes again.
        var lines = try String(contentsOf: b, encoding: .utf8).split(separator: "\n").map(String.init)
        lines[2] = lines[2].replacingOccurrences(of: #""timestamp":"2026"#, with: #""timestamp":"2099"#)
        let future = data.appendingPathComponent("future.jsonl")
        try (lines.joined(separator: "\n") + "\n").write(to: future, atomically: true, encoding: .utf8)
        let refused = try await runChordstore(["--data", data.path, "--store", "y", "import", future.path])
        #expect(refused.status == 1, "\(refused.stdout)")
        #expect(!(try await stores(data)).contains("y "), "a refused import left its store")

        // A file without the store's last event is no file to resume with either.
        let events = try String(contentsOf: b, encoding: .utf8).split(separator: "\n").map(String.init).dropFirst().dropLast()
        let firstTwo = data.appendingPathComponent("first-two.jsonl"), gap = data.appendingPathComponent("gap.jsonl")
        try (events.prefix(2).joined(separator: "\n") + "\n").write(to: firstTwo, atomically: true, encoding: .utf8)
        try ([events[events.startIndex], events[events.startIndex + 2]].joined(separator: "\n") + "\n").write(to: gap, atomically: true, encoding: .utf8)
        #expect(try await runChordstore(["--data", data.path, "--store", "q", "import", firstTwo.path]).status == 0)
        let gapped = try await runChordstore(["--data", data.path, "--store", "q", "import", "--resume", gap.path])
        #expect(gapped.status == 1 && gapped.stderr.contains("has no event 2"), "\(gapped.stdout)\(gapped.stderr)")

        let crlf = data.appendingPathComponent("crlf.jsonl")
        try String(contentsOf: a, encoding: .utf8).replacingOccurrences(of: "\n", with: "\r\n").write(to: crlf, atomically: true, encoding: .utf8)
        let imported = try await runChordstore(["--data", data.path, "--store", "z", "import", crlf.path])
        #expect(imported.status == 0 && imported.stdout.contains("imported 2 events"), "\(imported.stderr)")

        let empty = data.appendingPathComponent("empty.jsonl")
        try Data().write(to: empty)
        let nothing = try await runChordstore(["--data", data.path, "--store", "w", "import", empty.path])
        #expect(nothing.status == 1 && nothing.stderr.contains("holds no events and is not an export"), "\(nothing.stderr)")
        #expect(!(try await stores(data)).contains("w "))
    }

    @Test("an import refused after some of its batches went in says how many the store kept and how to go on")
    func partialImport() async throws {
        let data = Self.directory("partial")
        defer { try? FileManager.default.removeItem(at: data) }
        var options = ChordStore.Options()
        options.unsafeNoSync = true
        let store = try ChordStore.open(at: data, options: options)
        for index in 0..<1_100 { _ = try await store.execute(.addChordset(AddChordset(title: "c\(index)"))) }
        store.close()
        let file = data.appendingPathComponent("all.jsonl")
        #expect(try await runChordstore(["--data", data.path, "export", "--out", file.path]).status == 0)
        // Line 1,051 (event 1,050) from far ahead of the clock: the second batch is refused.
        var lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map(String.init)
        let moved = Self.future(lines[1_050])
        try #require(moved != lines[1_050], "no timestamp in \(lines[1_050])")
        lines[1_050] = moved
        try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
        let refused = try await runChordstore(["--data", data.path, "--store", "copy", "import", file.path])
        // The batches before the refused one stayed (how many depends on the batches' bytes).
        let kept = try #require(refused.stderr.firstMatch(of: /store copy kept the (\d+) events imported before it, up to its event (\d+): mend the file and import it again with --resume/), "\(refused.stderr)")
        #expect(refused.status == 1 && kept.1 == kept.2 && Int(kept.1)! > 0 && Int(kept.1)! < 1_050)
        let info = try await runChordstore(["--data", data.path, "--json", "store", "info", "copy"])
        #expect(info.stdout.contains("\"headSequence\":\"\(kept.1)\""), "\(info.stdout)")
    }

    /// An export line with its timestamp moved to 2099.
    private static func future(_ line: String) -> String {
        guard let range = line.range(of: #""timestamp":"[^"]*""#, options: .regularExpression) else { return line }
        return line.replacingCharacters(in: range, with: #""timestamp":"2099-01-01T00:00:00Z""#)
    }

    @Test("a verb that only reads, given a --data that holds no log, is refused and makes no directory; a verb that writes makes one")
    func readVerbsOnAMistypedDirectory() async throws {
        let typo = Self.directory("mistyped-data")
        defer { try? FileManager.default.removeItem(at: typo) }
        for verb in [["list"], ["list", "--limit", "5"], ["show", "controls"], ["log"], ["history"], ["store", "list"], ["store", "info"], ["export"], ["session"]] {
            let run = try await runChordstore(["--data", typo.path] + verb)
            #expect(run.status == 1 && run.stderr.contains("is not a data directory (it has no data.mdb): nothing to read"), "\(verb): \(run.stdout)\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: typo.path), "\(verb) made the directory it was wrongly given")
        }
        let backupTarget = Self.directory("mistyped-backup")
        defer { try? FileManager.default.removeItem(at: backupTarget) }
        let backup = try await runChordstore(["--data", typo.path, "backup", "--to", backupTarget.path])
        #expect(backup.status == 1 && backup.stderr.contains("is not a data directory (it has no data.mdb): nothing to back up"), "\(backup.stdout)\(backup.stderr)")
        #expect(!FileManager.default.fileExists(atPath: typo.path), "backup made the directory it was wrongly given")
        let export = try await runChordstore(["--data", typo.path, "export"])
        #expect(export.stdout.isEmpty, "export wrote before it refused: \(export.stdout)")
        let add = try await runChordstore(["--data", typo.path, "add", "first"])
        #expect(add.status == 0, "\(add.stderr)")
        let list = try await runChordstore(["--data", typo.path, "list"])
        #expect(list.status == 0 && list.stdout.contains("first"), "\(list.stdout)\(list.stderr)")
    }

    @Test("a negative number after an option is its value, refused for what it is, not 'Missing value'")
    func negativeNumbers() async throws {
        let data = Self.directory("negative-numbers")
        defer { try? FileManager.default.removeItem(at: data) }
        let add = try await runChordstore(["--data", data.path, "add", "slow", "--bpm", "-5"])
        #expect(add.status == 1 && add.stderr.contains("bpm -5.0 is outside 1...999"), "\(add.stderr)")
        let controls = try await runChordstore(["--data", data.path, "set-controls", "--bpm", "90", "--hue", "-0.5", "--purity", "1", "--brightness", "1"])
        #expect(controls.status == 1 && controls.stderr.contains("hue -0.5 is outside 0...1"), "\(controls.stderr)")
        let limit = try await runChordstore(["--data", data.path, "list", "--limit", "-3"])
        #expect(limit.status == 64 && limit.stderr.contains("--limit must be 0 or more"), "\(limit.stderr)")
    }

    @Test("an export that cannot be written fails with the reason; verify of a directory that is not one fails; a failed restore keeps the operator's empty directory")
    func outputAndTargetMistakes() async throws {
        let (data, _, _) = try await twoStores()
        defer { try? FileManager.default.removeItem(at: data) }
        if FileManager.default.fileExists(atPath: "/dev/full") {
            let full = try await runChordstore(["--data", data.path, "--store", "a", "export", "--out", "/dev/full"])
            #expect(full.status == 1 && full.stderr.contains("cannot write to /dev/full: No space left on device"), "\(full.stderr)")
            var status = stat()
            #expect(stat("/dev/full", &status) == 0 && (status.st_mode & S_IFMT) == S_IFCHR, "export replaced /dev/full")
        }
        let existing = data.appendingPathComponent("existing.jsonl")
        #expect(FileManager.default.createFile(atPath: existing.path, contents: Data("old".utf8), attributes: [.posixPermissions: 0o644]))
        #expect(try await runChordstore(["--data", data.path, "--store", "a", "export", "--out", existing.path]).status == 0)
        let attributes = try FileManager.default.attributesOfItem(atPath: existing.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600, "an export over an existing file keeps its mode")
        #expect(try String(contentsOf: existing, encoding: .utf8).hasPrefix("{\"chordstore_export\""))

        let typo = Self.directory("no-such-data")
        let verify = try await runChordstore(["--data", typo.path, "verify"])
        #expect(verify.status == 1 && verify.stderr.contains("is not a data directory"), "\(verify.stdout)\(verify.stderr)")
        #expect(!FileManager.default.fileExists(atPath: typo.path), "verify made the directory it was wrongly given")
        let rebuildTypo = try await runChordstore(["--data", typo.path, "rebuild"])
        #expect(rebuildTypo.status == 1 && rebuildTypo.stderr.contains("is not a data directory (it has no data.mdb): nothing to rebuild"), "\(rebuildTypo.stdout)\(rebuildTypo.stderr)")
        #expect(!FileManager.default.fileExists(atPath: typo.path), "rebuild made the directory it was wrongly given")

        // rebuild counts the whole log's events, as verify does (it said the default
        // store's: 0 here, where stores a and b hold every chordset).
        let rebuilt = try await runChordstore(["--data", data.path, "--json", "rebuild"])
        let verified = try await runChordstore(["--data", data.path, "--json", "verify"])
        let rebuiltEvents = try #require(try JSONSerialization.jsonObject(with: Data(rebuilt.stdout.utf8)) as? [String: Any])["events"] as? String
        let verifiedEvents = try #require(try JSONSerialization.jsonObject(with: Data(verified.stdout.utf8)) as? [String: Any])["events"] as? String
        #expect(rebuiltEvents != nil && rebuiltEvents == verifiedEvents && rebuiltEvents != "0", "\(rebuilt.stdout) \(verified.stdout)")
        // ... and every store's chordsets (it said the default store's: none here).
        let rebuiltChordsets = try #require(try JSONSerialization.jsonObject(with: Data(rebuilt.stdout.utf8)) as? [String: Any])["chordsets"] as? String
        #expect(rebuiltChordsets == "5", "\(rebuilt.stdout)")

        // verify and rebuild work on a data directory: --server is refused, not ignored
        // (they checked and rebuilt the default directory, making it if need be).
        let fallback = Self.directory("default-data")
        for verb in ["verify", "rebuild"] {
            let refused = try await runChordstore(["--server", "127.0.0.1:1", verb], environment: ["CHORDSTORE_DATA": fallback.path])
            #expect(refused.status == 64 && refused.stderr.contains("it takes no --server"), "\(verb): \(refused.stdout)\(refused.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: fallback.path), "rebuild made the default data directory")

        let target = Self.directory("restore-into")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: target) }
        let restore = try await runChordstore(["restore", "--from", Self.directory("no-such-backup").path, "--data", target.path])
        #expect(restore.status == 1)
        #expect(FileManager.default.fileExists(atPath: target.path), "a failed restore removed the directory the operator made")
        #expect((try FileManager.default.contentsOfDirectory(atPath: target.path)).isEmpty)
    }
}
