import ChordStoreEngine
import Foundation
import Testing

/// The `chordstore` verbs, run as a user would.
@Suite("chordstore command")
struct CommandLineTests {
    private func dataDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("chordstore-cli-\(UUID().uuidString)").path
    }

    @Test("add, rename, list --json, log --json and verify work on a data directory")
    func verbs() async throws {
        let data = dataDirectory()
        let added = try await runChordstore(["--data", data, "add", "Verse"])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.hasPrefix("added chordset "))
        let id = String(added.stdout.split(separator: " ")[2])
        #expect(try await runChordstore(["--data", data, "add"]).status == 0)
        #expect(try await runChordstore(["--data", data, "rename", id, "Chorus"]).status == 0)

        let list = try await runChordstore(["--data", data, "--json", "list"])
        let json = try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any]
        let titles = (json?["chordsets"] as? [[String: Any]])?.map { $0["title"] as? String ?? "" }
        #expect(titles == ["Chorus", ""])

        let log = try await runChordstore(["log", "--data", data, "--json"])
        #expect(log.stdout.split(separator: "\n").count == 3)
        #expect(log.stdout.contains("\"chordsetRenamed\""))

        let verify = try await runChordstore(["verify", "--data", data])
        #expect(verify.status == 0)
        #expect(verify.stdout.hasPrefix("ok: 3 events verified"))
        let profile = try await runChordstore(["profile", "--data", data])
        #expect(profile.stdout.hasPrefix("2 chordsets, 16 chords"))
    }

    @Test("a refused command exits 1 with the status code and the reason on standard error")
    func refusal() async throws {
        let data = dataDirectory()
        let result = try await runChordstore(["--data", data, "set-bpm", UUID().uuidString, "2000"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("INVALID_ARGUMENT: bpm 2000.0 is outside 1...999"))
        let missing = try await runChordstore(["--data", data, "delete", UUID().uuidString])
        #expect(missing.stderr.contains("NOT_FOUND"))
    }

    @Test("a data directory held by another process is refused with its pid")
    func directoryInUse() async throws {
        let data = dataDirectory()
        let store = try ChordStore.open(at: URL(fileURLWithPath: data))
        defer { store.close() }
        let result = try await runChordstore(["--data", data, "list"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("is in use by another process (pid \(ProcessInfo.processInfo.processIdentifier))"))
    }
}
