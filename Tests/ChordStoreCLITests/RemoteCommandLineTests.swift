import Foundation
import TestSupport
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
        // On the wire an add's bpm of 0 means the default: the command line refuses it
        // rather than add chords of 120 bpm.
        let zeroAdd = try await runChordstore(["--server", address, "add", "zero", "--bpm", "0"])
        #expect(zeroAdd.status == 1 && zeroAdd.stderr.contains("INVALID_ARGUMENT: bpm 0.0 is outside 1...999"), "\(zeroAdd.stdout)\(zeroAdd.stderr)")
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

    @Test("a server that takes the connection and never answers fails the verb (SERVER_NOT_ANSWERING) instead of keeping it waiting")
    func silentServer() async throws {
        // A listening socket nobody accepts from: the kernel completes the connection,
        // and nothing ever answers (what a frozen server looks like).
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && listen(listener, 16) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        try #require(bound)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let started = Date()
        let result = try await runChordstore(["--server", "127.0.0.1:\(port)", "--token", "t", "profile"], timeout: 45)
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("UNAVAILABLE: the server stopped answering"), "\(result.stderr)")
        #expect(elapsed < 30, "it took \(elapsed) s")
    }

    @Test("watch prints events as they commit; list filters, sorts, pages with a cursor and counts")
    func watchAndQueries() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("remote-cli-\(UUID().uuidString)")
        let (server, port, _) = try await ServerCrashTests.serve(directory)
        defer { kill(server.processIdentifier, SIGTERM) }
        let address = "127.0.0.1:\(port)"
        for title in ["Éclair", "eclair au chocolat", "Zebra", "café crème", "Cafe"] {
            #expect(try await runChordstore(["--server", address, "add", title]).status == 0)
        }
        // A watcher started now sees the stored events, then the next one as it commits.
        async let watched = runChordstore(["--server", address, "watch", "--count", "6"])
        try await Task.sleep(for: .milliseconds(500))
        #expect(try await runChordstore(["--server", address, "add", "Later"]).status == 0)
        let watch = try await watched
        #expect(watch.status == 0, "\(watch.stderr)")
        let lines = watch.stdout.split(separator: "\n")
        #expect(lines.count == 6 && lines[5].contains("\"Later\""), "\(watch.stdout)")

        let eclairs = try await runChordstore(["--server", address, "list", "--title-contains", "ECLAIR"])
        #expect(eclairs.stdout.split(separator: "\n").count == 3, "\(eclairs.stdout)")
        let cafes = try await runChordstore(["--server", address, "list", "--title-prefix", "caf", "--sort", "title", "--desc"])
        let cafeLines = cafes.stdout.split(separator: "\n")
        #expect(cafeLines.count == 3 && cafeLines[1].hasSuffix("café crème") && cafeLines[2].hasSuffix("Cafe"), "\(cafes.stdout)")
        let count = try await runChordstore(["--server", address, "list", "--count", "--title-contains", "a"])
        #expect(count.stdout == "6\n")  // "Later" has an "a" too
        // Paging by title, two at a time, through every chordset.
        var titles: [String] = []
        var arguments = ["--server", address, "list", "--sort", "title", "--limit", "2", "--desc"]
        for _ in 0..<5 {
            let page = try await runChordstore(arguments)
            let rows = page.stdout.split(separator: "\n").filter { !$0.hasPrefix("INDEX") && !$0.hasPrefix("more:") && $0 != "no chordsets" }
            titles += rows.map { String($0.split(separator: " ", maxSplits: 4).last ?? "") }
            guard let more = page.stdout.split(separator: "\n").first(where: { $0.hasPrefix("more: --cursor ") }) else { break }
            arguments = ["--server", address, "list", "--sort", "title", "--limit", "2", "--desc", "--cursor", String(more.dropFirst(15))]
        }
        #expect(titles.count == 6, "\(titles)")
        let bad = try await runChordstore(["--server", address, "list", "--sort", "title", "--cursor", "bm9uc2Vuc2U="])
        #expect(bad.status == 1 && bad.stderr.contains("INVALID_ARGUMENT"))
    }
}
