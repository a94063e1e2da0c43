import Foundation
import Testing

/// The verbs against a running `chordstore serve` (the default mode), and offline use of
/// the same data afterwards.
@Suite("chordstore command against a server")
struct RemoteCommandLineTests {
    @Test("add, list, show, rename, set-bpm, log and profile go through the server; a refusal exits 1")
    func verbsOverTheWire() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("remote-cli-\(UUID().uuidString)")
        let (server, port, _) = try await ServerCrashTests.serve(directory)
        let address = "127.0.0.1:\(port)"
        let added = try await runChordstore(["--server", address, "add", "Over the wire"])
        try #require(added.status == 0, "\(added.stderr)")
        let id = String(added.stdout.split(separator: " ")[2])
        #expect(try await runChordstore(["--server", address, "rename", id, "Renamed"]).status == 0)
        let show = try await runChordstore(["show", id, "--server", address])
        #expect(show.stdout.contains("title    Renamed"))
        let lines = show.stdout.split(separator: "\n")
        try #require(lines.count > 5, "\(show.stdout)")
        let chordID = String(lines[5].split(separator: " ")[1])
        #expect(try await runChordstore(["--server", address, "set-bpm", chordID, "77"]).status == 0)
        let list = try await runChordstore(["--server", address, "--json", "list"])
        #expect(list.stdout.contains("\"title\":\"Renamed\""))
        let log = try await runChordstore(["--server", address, "log"])
        #expect(log.stdout.split(separator: "\n").count == 3)
        let refused = try await runChordstore(["--server", address, "set-bpm", chordID, "0"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("INVALID_ARGUMENT: bpm 0.0 is outside 1...999"))
        let offlineWhileServing = try await runChordstore(["--data", directory.path, "list"])
        #expect(offlineWhileServing.stderr.contains("in use by another process"))

        kill(server.processIdentifier, SIGTERM)
        try await offPool { server.waitUntilExit() }
        #expect(server.terminationStatus == 0)
        let verify = try await runChordstore(["--data", directory.path, "verify"])
        #expect(verify.stdout.hasPrefix("ok: 3 events verified"), "\(verify.stdout)\(verify.stderr)")
        let noServer = try await runChordstore(["--server", address, "list"])
        #expect(noServer.status == 1)
        #expect(noServer.stderr.contains("no server answers at \(address)"))
    }
}
