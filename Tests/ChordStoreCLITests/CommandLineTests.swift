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

    @Test("undo, redo, session, history and --as-of work from the command line; the default session is stable per user")
    func undoVerbs() async throws {
        let data = dataDirectory()
        let home = dataDirectory()
        // No --session: the session comes from the per-user file, made on first use.
        let environment = ["XDG_CONFIG_HOME": home, "CHORDSTORE_SESSION": ""]
        func run(_ arguments: [String]) async throws -> RunResult {
            try await runChordstore(["--data", data] + arguments, environment: environment)
        }
        let added = try await run(["add", "Verse"])
        let id = String(added.stdout.split(separator: " ")[2])
        #expect(try await run(["rename", id, "Chorus"]).status == 0)
        let undo = try await run(["undo"])
        #expect(undo.status == 0, "\(undo.stderr)")
        #expect(undo.stdout.contains("\"Chorus\" -> \"Verse\""))
        let session = try await run(["session"])
        #expect(session.stdout.contains("redo would revert undo event 3"), "\(session.stdout)")
        let stored = try String(contentsOfFile: home + "/chordstore/session", encoding: .utf8)
        #expect(session.stdout.hasPrefix("session \(stored.trimmingCharacters(in: .whitespacesAndNewlines))"))
        #expect(try await run(["redo"]).stdout.contains("\"Verse\" -> \"Chorus\""))
        // Another session has nothing to undo.
        let other = try await run(["--session", "someone-else", "undo"])
        #expect(other.status == 1 && other.stderr.contains("FAILED_PRECONDITION"))

        let history = try await run(["history", id])
        #expect(history.stdout.split(separator: "\n").count == 4)
        #expect(history.stdout.contains("undo of 2") && history.stdout.contains("redo of 3"))
        let past = try await run(["list", "--as-of", "1"])
        #expect(past.stdout.hasPrefix("as of event 1:") && past.stdout.contains("Verse"))
        let shown = try await run(["show", id, "--as-of", "3"])
        #expect(shown.stdout.contains("title    Verse"))
        let bad = try await run(["list", "--as-of", "yesterday"])
        #expect(bad.status == 64)
        #expect(try await run(["verify"]).status == 0)
    }
}
