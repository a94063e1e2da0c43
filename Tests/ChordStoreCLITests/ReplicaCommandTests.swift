import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplica
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `chordstore replica`: the issue's walk-through (a write with the server down, then
/// sync, then a second device), and a replica process killed in the middle of a sync.
@Suite("chordstore replica", .serialized)
struct ReplicaCommandTests {
    @Test("import-core-data: --dry-run prints the report and writes nothing; the import queues the chordsets; again adds nothing; bad input is refused")
    func importCoreData() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("replica-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let file = root.appendingPathComponent("Performer.sqlite").path
        try FileManager.default.copyItem(atPath: FormatFixtureTests.fixtures.appendingPathComponent("core-data/performer.sqlite").path, toPath: file)
        let phone = ["replica", "--dir", root.appendingPathComponent("phone").path, "--store", "default"]
        let dry = try await runChordstore(phone + ["import-core-data", file, "--dry-run", "--notes", "1"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.contains("Dry run (nothing written): Image Performer store"))
        #expect(dry.stdout.contains("Chord     98 rows: 96 imported, 2 skipped"))
        #expect(dry.stdout.contains("12 chordsets would be added (1 chord filled in); the controls chord would be set"))
        #expect(dry.stdout.contains("id-filled (3):") && dry.stdout.contains("... and 2 more"))
        #expect(dry.stdout.contains("holds no replica yet: nothing was made"))
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("phone").path), "a dry run makes no replica")
        let refusedFirst = try await runChordstore(phone + ["import-core-data", root.path])
        #expect(refusedFirst.status == 1 && refusedFirst.stderr.contains("not a regular file"))
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("phone").path), "a refused import makes no replica")
        let done = try await runChordstore(phone + ["import-core-data", file])
        #expect(done.status == 0 && done.stdout.contains("13 writes queued: sync sends them") && done.stdout.contains("13 pending writes"))
        let again = try await runChordstore(phone + ["import-core-data", file, "--json"])
        #expect(again.status == 0 && again.stdout.contains("\"writesQueued\":0") && again.stdout.contains("\"rule\":\"already-imported\""))
        let listed = try await runChordstore(phone + ["list"])
        #expect(listed.stdout.contains("Before 2001") && listed.stdout.contains("13 pending writes"))

        let badMap = try await runChordstore(phone + ["import-core-data", file, "--map", "ZSAT=saturation"])
        #expect(badMap.status == 64 && badMap.stderr.contains("saturation is not a colour component"))
        let missing = try await runChordstore(phone + ["import-core-data", root.appendingPathComponent("none.sqlite").path])
        #expect(missing.status == 1 && missing.stderr.contains("NOT_FOUND"))
        let unmatched = try await runChordstore(phone + ["import-core-data", file, "--map", "ZNONE=hue"])
        #expect(unmatched.status == 1 && unmatched.stderr.contains("RLColor has no column ZNONE"), "\(unmatched.stderr)")
    }

    @Test("import-core-data killed at any moment queues all of the store or none of it; a later import completes it once")
    func importCoreDataKilled() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("replica-import-kill-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let file = root.appendingPathComponent("Performer.sqlite")
        let chordsets = 3_000
        let script = FormatFixtureTests.fixtures.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("tools/core-data-fixture")
        let made = try await offPool {
            try runExecutable(
                URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, "--model", "performer", "--chordsets", "\(chordsets)", file.path], timeout: 120)
        }
        #expect(made.status == 0, "\(made.stderr)")
        let directory = root.appendingPathComponent("device")
        let all = chordsets + 1  // and the controls chord
        for delay in [20, 60, 120, 200, 300, 450, 600, 800, 1_000, 1_300, 1_700, 2_200, 3_000, 5_000] {
            let process = Process()
            process.executableURL = try chordstoreExecutable()
            process.arguments = ["replica", "--dir", directory.path, "--store", "default", "import-core-data", file.path]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            try await Task.sleep(for: .milliseconds(delay))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            guard FileManager.default.fileExists(atPath: directory.path) else { continue }
            let replica = try await Replica.open(at: directory, store: "default")
            let pending = replica.pendingWrites.count
            let shown = try replica.count()
            replica.close()
            #expect(pending == 0 || pending == all, "after a kill at \(delay) ms: \(pending) writes queued")
            #expect(shown == (pending == 0 ? 0 : chordsets))
            if pending == all { break }
        }
        let finished = try await runChordstore(["replica", "--dir", directory.path, "--store", "default", "import-core-data", file.path])
        #expect(finished.status == 0, "\(finished.stderr)")
        let replica = try await Replica.open(at: directory)
        defer { replica.close() }
        let shown = try replica.count()
        #expect(replica.pendingWrites.count == all && shown == chordsets)
    }

    @Test("add and list with the server down; sync; the server and a second replica show the write")
    func offlineThenSync() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("replica-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let phone = root.appendingPathComponent("phone").path
        let down = ["--server", "127.0.0.1:1"]
        let added = try await runChordstore(["replica", "--dir", phone, "--store", "default", "add", "Offline"] + down)
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.contains("1 pending write, at store sequence 0"))
        let listed = try await runChordstore(["replica", "--dir", phone, "list"] + down)
        #expect(listed.stdout.contains("Offline"))
        let offline = try await runChordstore(["replica", "--dir", phone, "sync"] + down)
        #expect(offline.status == 1)
        #expect(offline.stderr.contains("UNAVAILABLE"))
        let status = try await runChordstore(["replica", "--dir", phone, "status"])
        #expect(status.stdout.contains("pending: 1"))
        #expect(status.stdout.contains("last sequence: 0"))

        let data = root.appendingPathComponent("data")
        let (server, port, _) = try await ServerCrashTests.serve(data)
        defer { server.terminate() }
        let up = ["--server", "127.0.0.1:\(port)"]
        let synced = try await runChordstore(["replica", "--dir", phone, "sync"] + up)
        #expect(synced.status == 0, "\(synced.stderr)")
        #expect(synced.stdout.contains("sent 1 write, 0 rejected; copied 1 event; 0 pending writes, at store sequence 1"))
        #expect(try await runChordstore(["list"] + up).stdout.contains("Offline"))
        let tablet = root.appendingPathComponent("tablet").path
        #expect(try await runChordstore(["replica", "--dir", tablet, "--store", "default", "sync"] + up).status == 0)
        #expect(try await runChordstore(["replica", "--dir", tablet, "list"] + up).stdout.contains("Offline"))
        let verified = try await runChordstore(["replica", "--dir", tablet, "verify"])
        #expect(verified.status == 0, "\(verified.stderr)")
        #expect(verified.stdout.contains("verified 1 copied event: the view is their fold"), "\(verified.stdout)")
        let wrong = try await runChordstore(["replica", "--dir", tablet, "--store", "other", "list"])
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("is a replica of store default"))
    }

    @Test("a replica process killed in the middle of a sync loses no queued write and duplicates none")
    func killDuringSync() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("replica-kill-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let (server, port, _) = try await ServerCrashTests.serve(root.appendingPathComponent("data"))
        defer { server.terminate() }
        let directory = root.appendingPathComponent("device")
        let writes = 300
        do {
            let replica = try await Replica.open(at: directory, store: "default")
            for index in 0..<writes { try replica.addChordset(AddChordset(title: "w\(index)")) }
            replica.close()
        }
        let client = Client(host: "127.0.0.1", port: port, retry: .once)
        defer { Task { await client.close() } }
        // The replica's upload goes through a proxy that passes 4 KB/s on: a sync of the
        // 300 writes takes seconds however loaded the machine, and each kill lands once
        // the server holds some of them, not after a guessed delay.
        let proxy = try RelayProxy(targetPort: port, uploadBytesPerSecond: 4_096)
        defer { proxy.stop() }
        var interrupted = 0
        for _ in 0..<3 {
            let before = try await client.profile().chordsets
            let process = Process()
            process.executableURL = try chordstoreExecutable()
            process.arguments = ["replica", "--dir", directory.path, "sync", "--server", "127.0.0.1:\(proxy.port)"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline, process.isRunning, try await client.profile().chordsets == before {
                try await Task.sleep(for: .milliseconds(10))
            }
            let exited = !process.isRunning
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            proxy.cut()  // what the dead process sent and the proxy holds goes no further

            let titles = try await client.chordsets(limit: 5_000).map(\.title)
            if exited && titles.count == before {
                Issue.record("the sync ended by itself (exit \(process.terminationStatus)) before the server held any of its writes")
            }
            #expect(Set(titles).count == titles.count, "a write was applied twice")
            let replica = try await Replica.open(at: directory)
            let pending = replica.pendingWrites.compactMap { write -> String? in
                guard case .addChordset(let add) = write.command else { return nil }
                return add.title
            }
            replica.close()
            #expect(Set(titles).union(pending) == Set((0..<writes).map { "w\($0)" }), "a queued write was lost")
            if titles.count > before && titles.count < writes { interrupted += 1 }
            if titles.count == writes { break }
        }
        #expect(interrupted > 0, "no kill landed in the middle of a sync")
        let finished = try await runChordstore(["replica", "--dir", directory.path, "sync", "--server", "127.0.0.1:\(port)"])
        #expect(finished.status == 0, "\(finished.stderr)")
        let titles = try await client.chordsets(limit: 5_000).map(\.title)
        #expect(titles.count == writes)
        #expect(Set(titles) == Set((0..<writes).map { "w\($0)" }))
        let replica = try await Replica.open(at: directory)
        defer { replica.close() }
        #expect(replica.pendingWrites.isEmpty)
        #expect(try replica.chordsets().chordsets.map(\.title) == titles)
    }
}
