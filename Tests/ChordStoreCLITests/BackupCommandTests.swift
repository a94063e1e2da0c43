import ChordStoreAPI
@_spi(Raw) import ChordStoreClient
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf
import TestSupport
import Testing

/// `chordstore backup`, `restore`, `export` and `import`, and a follower's bootstrap from
/// its leader's files, as an operator runs them.
@Suite("Backup, restore, export, import and bootstrap from the command line")
struct BackupCommandTests {
    static func directory(_ name: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
    }

    @Test("backup during a write load, restore, then verify on the copy passes; a non-empty target and a missing token are refused")
    func backupRestoreVerify() async throws {
        let data = Self.directory("backup-source"), copy = Self.directory("backup-copy"), restored = Self.directory("backup-restored")
        defer { for url in [data, copy, restored] { try? FileManager.default.removeItem(at: url) } }
        let served = try await ServedChordstore.start(data, [])
        defer { served.stopIfRunning() }
        let address = "127.0.0.1:\(served.port)"
        let token = ["CHORDSTORE_TOKEN_FILE": data.appendingPathComponent("admin.token").path]
        let adminToken = try String(contentsOf: data.appendingPathComponent("admin.token"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let load = WriteLoad(port: served.port, clients: 2, writes: 1_500, token: adminToken)
        #expect(await eventually { load.acknowledged.count >= 50 })
        let acknowledgedBefore = load.acknowledged.count
        let backup = try await runChordstore(["--server", address, "backup", "--to", copy.path], environment: token)
        #expect(backup.status == 0, "\(backup.stderr)")
        #expect(backup.stdout.hasPrefix("backed up log position "), "\(backup.stdout)")
        load.stop()
        await load.finished()
        let refused = try await runChordstore(["--server", address, "backup", "--to", copy.path], environment: token)
        #expect(refused.status == 1 && refused.stderr.contains("ALREADY_EXISTS"), "\(refused.stderr)")
        let stranger = try await runChordstore(["--server", address, "--token", "cs1.nobody.nothing", "backup", "--to", Self.directory("never").path])
        #expect(stranger.status == 1 && stranger.stderr.contains("UNAUTHENTICATED"), "\(stranger.stderr)")
        #expect(try await served.terminate() == 0)

        let restore = try await runChordstore(["restore", "--from", copy.path, "--data", restored.path])
        #expect(restore.status == 0, "\(restore.stderr)")
        #expect(restore.stdout.contains("verify: ok"), "\(restore.stdout)")
        let verify = try await runChordstore(["--data", restored.path, "verify"])
        #expect(verify.status == 0 && verify.stdout.hasPrefix("ok: "), "\(verify.stdout)\(verify.stderr)")
        let again = try await runChordstore(["restore", "--from", copy.path, "--data", restored.path])
        #expect(again.status == 1 && again.stderr.contains("not empty"), "\(again.stderr)")
        // The copy holds at least the writes acknowledged before the backup began.
        let count = try await runChordstore(["--data", restored.path, "list", "--count"])
        #expect((Int(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= acknowledgedBefore, "\(count.stdout)")
    }

    @Test("export then import into a new store gives the same chordsets, history and undo")
    func exportImport() async throws {
        let data = Self.directory("export")
        defer { try? FileManager.default.removeItem(at: data) }
        let served = try await ServedChordstore.start(data, ["--auth", "none"])
        defer { served.stopIfRunning() }
        let address = "127.0.0.1:\(served.port)"
        let session = ["CHORDSTORE_SESSION": "mover"]
        var ids: [String] = []
        for title in ["Verse", "Chorus", "Bridge"] {
            let added = try await runChordstore(["--server", address, "add", title], environment: session)
            try #require(added.status == 0, "\(added.stderr)")
            ids.append(String(added.stdout.split(separator: " ")[2]))
        }
        #expect(try await runChordstore(["--server", address, "rename", ids[0], "Intro"], environment: session).status == 0)
        #expect(try await runChordstore(["--server", address, "delete", ids[1]], environment: session).status == 0)
        #expect(try await runChordstore(["--server", address, "undo"], environment: session).status == 0)
        let file = data.appendingPathComponent("default.jsonl")
        let export = try await runChordstore(["--server", address, "export", "--out", file.path])
        #expect(export.status == 0 && export.stdout.contains("exported 6 events"), "\(export.stdout)\(export.stderr)")
        let imported = try await runChordstore(["--server", address, "--store", "moved", "import", file.path])
        #expect(imported.status == 0 && imported.stdout.contains("imported 6 events into store moved (created)"), "\(imported.stdout)\(imported.stderr)")
        let original = try await runChordstore(["--server", address, "--json", "list"])
        let copy = try await runChordstore(["--server", address, "--store", "moved", "--json", "list"])
        #expect(original.stdout == copy.stdout && original.stdout.contains("Intro"))
        let originalLog = try await runChordstore(["--server", address, "log"])
        let copyLog = try await runChordstore(["--server", address, "--store", "moved", "log"])
        #expect(originalLog.stdout == copyLog.stdout)
        let redo = try await runChordstore(["--server", address, "--store", "moved", "session"], environment: session)
        #expect(redo.stdout.contains("redo would revert undo event 6"), "\(redo.stdout)")
        let twice = try await runChordstore(["--server", address, "--store", "moved", "import", file.path])
        #expect(twice.status == 1 && twice.stderr.contains("holds 6 events"), "\(twice.stderr)")
        // An export cut short (its last line missing) is refused before anything is imported.
        let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 8 && lines.last?.contains("\"chordstore_export_end\":{\"events\":6,\"last_sequence\":6}") == true, "\(lines.last ?? "")")
        let cut = data.appendingPathComponent("cut.jsonl")
        try Data((lines.dropLast(2).joined(separator: "\n") + "\n").utf8).write(to: cut)
        let partial = try await runChordstore(["--server", address, "--store", "partial", "import", cut.path])
        #expect(partial.status == 1 && partial.stderr.contains("cut short"), "\(partial.stderr)")
        let none = try await runChordstore(["--server", address, "store", "list"])
        #expect(!none.stdout.contains("partial"), "\(none.stdout)")
        let garbage = data.appendingPathComponent("garbage.jsonl")
        try Data("{\"sequence\":\"1\",\"allDeleted\":{}}\nnot json\n".utf8).write(to: garbage)
        let bad = try await runChordstore(["--server", address, "--store", "other", "import", garbage.path])
        #expect(bad.status == 1 && bad.stderr.contains("line 2"), "\(bad.stderr)")
        #expect(try await served.terminate() == 0)
    }

    @Test("a follower started on an empty directory bootstraps from a copy of its leader's files, serves every read at once, then follows")
    func followerBootstrap() async throws {
        let leaderData = Self.directory("bootstrap-leader"), followerData = Self.directory("bootstrap-follower")
        defer { for url in [leaderData, followerData] { try? FileManager.default.removeItem(at: url) } }
        let ports = try LoopbackPorts.free(2)
        let leader = try await ServedChordstore.start(leaderData, [
            "--auth", "none", "--advertise", "127.0.0.1:\(ports[0])", "--peer", "127.0.0.1:\(ports[1])", "--port", "\(ports[0])",
        ])
        defer { leader.stopIfRunning() }
        let leaderAddress = "127.0.0.1:\(leader.port)"
        let connection = try await Connection.connect(host: "127.0.0.1", port: leader.port)
        // It leads once its probe of the peer (not started yet) has ended.
        #expect(await eventually {
            (try? await connection.call(.health, Chordstore_V1_HealthRequest(), as: Chordstore_V1_HealthReply.self))?.leader == leaderAddress
        })
        for index in 0..<500 {
            _ = try await connection.call(.addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "before \(index)" }, as: Chordstore_V1_CommandReply.self)
        }
        let follower = try await ServedChordstore.start(followerData, [
            "--auth", "none", "--follow", leaderAddress, "--advertise", "127.0.0.1:\(ports[1])", "--peer", leaderAddress, "--port", "\(ports[1])",
            "--log-level", "notice",
        ])
        defer { follower.stopIfRunning() }
        #expect(follower.log.text.contains("bootstrapped from a copy of the leader's files"), "\(follower.log.text)")
        // Its port served the copy's views before the log had arrived (docs/REPLICATION.md).
        let text = follower.log.text
        let interim = text.range(of: "serving reads from the copy of the leader's views while its log arrives")
        let whole = text.range(of: "bootstrapped from a copy of the leader's files")
        #expect(interim != nil && whole != nil && interim!.lowerBound < whole!.lowerBound, "\(text)")
        let count = try await runChordstore(["--server", "127.0.0.1:\(follower.port)", "list", "--count"])
        #expect(count.stdout == "500\n", "\(count.stdout)\(count.stderr)")
        _ = try await connection.call(.addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "after" }, as: Chordstore_V1_CommandReply.self)
        #expect(await eventually {
            (try? await runChordstore(["--server", "127.0.0.1:\(follower.port)", "list", "--count"]).stdout) == "501\n"
        })
        await connection.close()
        #expect(try await follower.terminate() == 0)
        #expect(try await leader.terminate() == 0)
        let verify = try await runChordstore(["--data", followerData.path, "verify"])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
    }
}
