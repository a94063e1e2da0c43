import ChordStoreClient
import Foundation
import TestSupport
import Testing

/// Stores as a user of the command line meets them: `--store`, `$CHORDSTORE_STORE`,
/// `chordstore store …`, against a server and its follower.
@Suite("chordstore store", .serialized)
struct StoreCommandTests {
    @Test("--store a add X; --store b list does not show X; store list; undo in a leaves b; watch in a; a follower serves both")
    func tour() async throws {
        let leaderData = FileManager.default.temporaryDirectory.appendingPathComponent("stores-leader-\(UUID().uuidString)")
        let followerData = FileManager.default.temporaryDirectory.appendingPathComponent("stores-follower-\(UUID().uuidString)")
        let (leader, leaderPort, _) = try await ServerCrashTests.serve(leaderData)
        defer { leader.terminate() }
        let followerPort = try LoopbackPorts.free(1)[0]
        let follower = Process()
        follower.executableURL = try chordstoreExecutable()
        follower.arguments = [
            "serve", "--data", followerData.path, "--port", "\(followerPort)", "--follow", "127.0.0.1:\(leaderPort)",
            "--log-level", "error", "--auth", "none", "--http-port", "none",
        ]
        follower.standardOutput = FileHandle.nullDevice
        follower.standardError = FileHandle.nullDevice
        try follower.run()
        defer { follower.terminate() }

        let server = ["--server", "127.0.0.1:\(leaderPort)"]
        let environment = ["CHORDSTORE_SESSION": "tourist"]
        func cs(_ arguments: [String], env: [String: String] = [:]) async throws -> RunResult {
            try await runChordstore(server + arguments, environment: environment.merging(env) { $1 })
        }
        #expect(try await cs(["store", "create", "a"]).status == 0)
        #expect(try await cs(["store", "create", "b"]).status == 0)
        let added = try await cs(["--store", "a", "add", "X"])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(try await cs(["--store", "b", "list"]).stdout.contains("X") == false)
        #expect(try await cs(["list"], env: ["CHORDSTORE_STORE": "a"]).stdout.contains("X"))
        let stores = try await cs(["store", "list"])
        #expect(stores.stdout.split(separator: "\n").map { String($0.split(separator: " ")[0]) } == ["default", "a", "b"])

        #expect(try await cs(["--store", "b", "add", "Z"]).status == 0)
        #expect(try await cs(["--store", "a", "add", "Y"]).status == 0)
        #expect(try await cs(["--store", "a", "undo"]).status == 0)
        #expect(try await cs(["--store", "a", "list"]).stdout.contains("Y") == false)
        #expect(try await cs(["--store", "b", "--json", "list"]).stdout.contains("\"title\":\"Z\""))
        // watch in a prints a's events only (b's Z came between them).
        let log = try await cs(["--store", "a", "watch", "--from", "1", "--count", "3"])
        #expect(log.stdout.split(separator: "\n").count == 3)
        #expect(!log.stdout.contains("\"Z\""), "\(log.stdout)")
        #expect(log.stdout.contains("\"X\"") && log.stdout.contains("undo of 2"), "\(log.stdout)")

        // The follower serves each store.
        let followerServer = ["--server", "127.0.0.1:\(followerPort)"]
        #expect(try await eventually {
            let a = try await runChordstore(followerServer + ["--store", "a", "--json", "list"]).stdout
            let b = try await runChordstore(followerServer + ["--store", "b", "--json", "list"]).stdout
            return a.contains("\"title\":\"X\"") && !a.contains("\"title\":\"Z\"") && b.contains("\"title\":\"Z\"") && !b.contains("\"title\":\"X\"")
        })

        // Refusals say what is wrong.
        let bad = try await cs(["--store", "Bad Name", "list"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("1–64 characters"))
        let unknown = try await cs(["--store", "nope", "list"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("NOT_FOUND: there is no store named nope"))
        let unconfirmed = try await cs(["store", "delete", "b"])
        #expect(unconfirmed.status == 64)
        #expect(try await cs(["store", "delete", "b", "--yes"]).status == 0)
        #expect(try await cs(["store", "info", "b"]).stderr.contains("NOT_FOUND"))
    }

    @Test("--store works on a data directory too, and the stores survive a reopen")
    func local() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("stores-local-\(UUID().uuidString)").path
        #expect(try await runChordstore(["--data", data, "store", "create", "mine"]).status == 0)
        #expect(try await runChordstore(["--data", data, "--store", "mine", "add", "Verse"]).status == 0)
        #expect(try await runChordstore(["--data", data, "list"]).stdout.contains("Verse") == false)
        #expect(try await runChordstore(["--data", data, "--store", "mine", "list"]).stdout.contains("Verse"))
        let info = try await runChordstore(["--data", data, "--json", "store", "info", "mine"])
        #expect(info.stdout.contains("\"chordsets\":\"1\""), "\(info.stdout)")
        let verify = try await runChordstore(["--data", data, "verify"])
        #expect(verify.status == 0, "\(verify.stdout)")
    }
}
