import ChordStoreDomain
import ChordStoreEngine
import Foundation
import Testing
import TestSupport

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

    @Test("verify opens a directory a --live-state server used (it holds live-state) as that server does, and checks the state in memory, the state saved last and the views")
    func verifyLiveState() async throws {
        let data = dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        var options = ChordStore.Options()
        options.liveState = true
        let store = try ChordStore.open(at: URL(fileURLWithPath: data), options: options)
        for index in 0..<5 { _ = try await store.execute(.addChordset(AddChordset(title: "c\(index)"))) }
        store.close()
        #expect(FileManager.default.fileExists(atPath: URL(fileURLWithPath: data).appendingPathComponent(ChordStore.liveStateFileName).path))
        let verify = try await runChordstore(["verify", "--data", data])
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(verify.stdout.hasPrefix("ok: 5 events verified"), "\(verify.stdout)")
        #expect(verify.stdout.contains("the state in memory, the state saved last (if the next start would load it) and the views match a replay of the log"), "\(verify.stdout)")
        // A data directory without the file is verified as before.
        try FileManager.default.removeItem(at: URL(fileURLWithPath: data).appendingPathComponent(ChordStore.liveStateFileName))
        let plain = try await runChordstore(["verify", "--data", data])
        #expect(plain.stdout.contains("; the views match a replay of the log"), "\(plain.stdout)")
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

    @Test("a plain list prints every chordset, in pages under the frame limit; history pages too and says when more follow")
    func longListsAndHistories() async throws {
        try await onOwnThread {
            let data = dataDirectory()
            defer { try? FileManager.default.removeItem(atPath: data) }
            var options = ChordStore.Options()
            options.unsafeNoSync = true
            let store = try ChordStore.open(at: URL(fileURLWithPath: data), options: options)
            // More than the 5,000 one list call returns; titles of 55 emoji of 18 bytes each
            // (990 bytes: the limit is 1,000) for half of them: 5,000 in one reply would be
            // over the 4 MiB frame.
            let count = 5_300
            let long = String(repeating: "👨‍👩‍👧", count: 55)
            for first in stride(from: 0, to: count, by: 100) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in first..<(first + 100) {
                        group.addTask {
                            _ = try await store.execute(.addChordset(AddChordset(title: index % 2 == 0 ? long : "c\(index)")), context: CommandContext(session: "pages"))
                        }
                    }
                    try await group.waitForAll()
                }
            }
            store.close()

            let all = try await runChordstore(["--data", data, "list"])
            #expect(all.status == 0, "\(all.stderr)")
            #expect(all.stdout.split(separator: "\n").count == count + 1)
            let json = try await runChordstore(["--data", data, "--json", "list"])
            let chordsets = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])["chordsets"] as? [[String: Any]]
            #expect(chordsets?.count == count)
            let limited = try await runChordstore(["--data", data, "list", "--sort", "index", "--limit", "1001"])
            let lines = limited.stdout.split(separator: "\n").dropFirst()
            #expect(lines.count == 1_001 && lines.map { Int($0.split(separator: " ")[0]) } == (0...1_000).map { $0 }, "\(limited.stderr)")

            let history = try await runChordstore(["--data", data, "--session", "pages", "history"])
            #expect(history.stdout.split(separator: "\n").count == 1_000)
            #expect(history.stderr.contains("note: listed 1000 events; more follow: --after 1000"), "\(history.stderr)")
            let longer = try await runChordstore(["--data", data, "--session", "pages", "history", "--limit", "2000"])
            #expect(longer.stdout.split(separator: "\n").count == 2_000)
            #expect(longer.stderr.contains("more follow: --after 2000"), "\(longer.stderr)")
            let rest = try await runChordstore(["--data", data, "--session", "pages", "history", "--after", "5000", "--limit", "5000"])
            #expect(rest.stdout.split(separator: "\n").count == count - 5_000 && rest.stderr.isEmpty, "\(rest.stderr)")

            // Over the wire, where one list call returns at most 5,000 and a reply at most 4 MiB.
            let (server, port, _) = try await ServerCrashTests.serve(URL(fileURLWithPath: data))
            defer { kill(server.processIdentifier, SIGTERM) }
            let remote = try await runChordstore(["--server", "127.0.0.1:\(port)", "list"])
            #expect(remote.status == 0 && remote.stdout.split(separator: "\n").count == count + 1, "\(remote.stderr)")
            let remoteHistory = try await runChordstore(["--server", "127.0.0.1:\(port)", "--session", "pages", "history", "--limit", "6000"])
            #expect(remoteHistory.status == 0 && remoteHistory.stdout.split(separator: "\n").count == count, "\(remoteHistory.stderr)")
        }
    }

    @Test("set-bpm and set-color take 'controls' for the controls chord, as show does; without one it is NOT_FOUND")
    func controlsByName() async throws {
        let data = dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let none = try await runChordstore(["--data", data, "set-bpm", "controls", "90"])
        #expect(none.status == 1 && none.stderr.contains("NOT_FOUND: the store has no controls chord"), "\(none.stderr)")
        #expect(try await runChordstore(["--data", data, "set-controls", "--bpm", "80", "--hue", "0.1", "--purity", "0.2", "--brightness", "0.3"]).status == 0)
        let bpm = try await runChordstore(["--data", data, "set-bpm", "controls", "91"])
        #expect(bpm.status == 0, "\(bpm.stderr)")
        let color = try await runChordstore(["--data", data, "set-color", "controls", "--hue", "0.5", "--purity", "0.5", "--brightness", "0.5"])
        #expect(color.status == 0, "\(color.stderr)")
        let shown = try await runChordstore(["--data", data, "--json", "show", "controls"])
        #expect(shown.stdout.contains("\"bpm\":91") && shown.stdout.contains("\"hue\":0.5"), "\(shown.stdout)")
    }

    @Test("a token file that is empty, a directory or missing is refused saying which")
    func tokenFileMistakes() async throws {
        let directory = dataDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for (file, expected) in [
            ("/dev/null", "/dev/null is empty: it should hold a token"),
            (directory, "\(directory) is a directory; give the file that holds a token"),
            (directory + "/missing", "cannot read a token from \(directory)/missing: No such file or directory"),
        ] {
            let result = try await runChordstore(["--server", "127.0.0.1:1", "--token-file", file, "profile"])
            #expect(result.status == 1 && result.stderr.contains(expected), "\(result.stderr)")
        }
    }

    @Test("a data directory held by another process is refused with its pid")
    func directoryInUse() async throws {
        let data = dataDirectory()
        let store = try ChordStore.open(at: URL(fileURLWithPath: data))
        defer { store.close() }
        let result = try await runChordstore(["--data", data, "list"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("is in use by another process (pid \(ProcessInfo.processInfo.processIdentifier))"))
        #expect(result.stderr.contains("send commands to the running server"))
        // verify and rebuild have no --server form: they say to stop the holder first.
        for verb in ["verify", "rebuild"] {
            let refused = try await runChordstore(["--data", data, verb])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("is in use by another process (pid \(ProcessInfo.processInfo.processIdentifier)); stop it first: \(verb) works on a data directory no server has open"), "\(refused.stderr)")
            #expect(!refused.stderr.contains("send commands"))
        }
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
