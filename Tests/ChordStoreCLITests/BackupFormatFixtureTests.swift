import Foundation
import Testing

/// The backup format (backup_format 1) and the export format (chordstore_export 1) are
/// on-disk formats too: every later version must restore and import the golden fixtures
/// written by the version that introduced them (Tests/Fixtures/make-backup1.sh) and print
/// what that version printed.
@Suite("Backup and export format fixtures")
struct BackupFormatFixtureTests {
    static let fixtures = DocsContractTests.root.appendingPathComponent("Tests/Fixtures")

    private func expected(_ name: String) throws -> String {
        try String(contentsOf: Self.fixtures.appendingPathComponent("backup1-expected/\(name)"), encoding: .utf8)
    }

    @Test("the backup of format 1 restores to the same chordsets, log and stores, and passes verify")
    func restoreBackup1() async throws {
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("backup1-restored-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: target) }
        let restore = try await runChordstore(["restore", "--from", Self.fixtures.appendingPathComponent("backup1").path, "--data", target.path])
        #expect(restore.status == 0 && restore.stdout.contains("restored log position 9 (epoch 1)") && restore.stdout.contains("verify: ok, 9 events"), "\(restore.stdout)\(restore.stderr)")
        #expect(try await runChordstore(["--data", target.path, "--json", "list"]).stdout == expected("restored-list.json"))
        #expect(try await runChordstore(["--data", target.path, "--json", "log"]).stdout == expected("restored-log.json"))
        #expect(try await runChordstore(["--data", target.path, "--store", "songs", "--json", "list"]).stdout == expected("restored-songs-list.json"))
    }

    @Test("the export of format 1 imports into a new store with the same chordsets and undo")
    func importExport1() async throws {
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("export1-imported-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: target) }
        let imported = try await runChordstore(["--data", target.path, "--store", "moved", "import", Self.fixtures.appendingPathComponent("export1.jsonl").path])
        #expect(imported.status == 0 && imported.stdout.contains("imported 7 events into store moved (created)"), "\(imported.stdout)\(imported.stderr)")
        #expect(try await runChordstore(["--data", target.path, "--store", "moved", "--json", "list"]).stdout == expected("imported-list.json"))
        let session = try await runChordstore(["--data", target.path, "--store", "moved", "--session", "alice", "session"])
        #expect(session.stdout == (try expected("imported-session-alice.txt")))
    }

    @Test("a backup or an export of a newer format is refused with a message naming both formats, and nothing is written")
    func newerFormatsRefused() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("newer-format-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let backup = scratch.appendingPathComponent("backup")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: Self.fixtures.appendingPathComponent("backup1"), to: backup)
        let manifest = backup.appendingPathComponent("chordstore-backup.json")
        let text = try String(contentsOf: manifest, encoding: .utf8)
        try text.replacingOccurrences(of: "\"backup_format\" : 1", with: "\"backup_format\" : 2").write(to: manifest, atomically: true, encoding: .utf8)
        let target = scratch.appendingPathComponent("restored")
        let restore = try await runChordstore(["restore", "--from", backup.path, "--data", target.path])
        #expect(restore.status != 0 && restore.stderr.contains("has backup format 2, newer than this chordstore reads (1)"), "\(restore.stdout)\(restore.stderr)")
        #expect(!FileManager.default.fileExists(atPath: target.appendingPathComponent("data.mdb").path))

        let export = scratch.appendingPathComponent("export.jsonl")
        let lines = try String(contentsOf: Self.fixtures.appendingPathComponent("export1.jsonl"), encoding: .utf8)
        try lines.replacingOccurrences(of: "{\"chordstore_export\":1,", with: "{\"chordstore_export\":2,").write(to: export, atomically: true, encoding: .utf8)
        let data = scratch.appendingPathComponent("data")
        let imported = try await runChordstore(["--data", data.path, "--store", "moved", "import", export.path])
        #expect(imported.status != 0 && imported.stderr.contains("the export has format 2, newer than this chordstore reads (1)"), "\(imported.stdout)\(imported.stderr)")
        let stores = try await runChordstore(["--data", data.path, "store", "list"])
        #expect(!stores.stdout.contains("moved"), "\(stores.stdout)")
    }
}
