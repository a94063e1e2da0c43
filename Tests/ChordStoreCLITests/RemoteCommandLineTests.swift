import ChordStoreClient
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
        let (listener, port) = try Self.listener()
        defer { close(listener) }
        let started = Date()
        let result = try await runChordstore(["--server", "127.0.0.1:\(port)", "--token", "t", "profile"], timeout: 45)
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("UNAVAILABLE: the server stopped answering"), "\(result.stderr)")
        #expect(elapsed < 30, "it took \(elapsed) s")
    }

    @Test("serve names the port it could not listen on and why beside the error (gRPC's did not say which; NIO's had a stray parenthesis)")
    func portTaken() async throws {
        let (taken, port) = try Self.listener()
        defer { close(taken) }
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("remote-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let free = try LoopbackPorts.free(1)[0]
        for (arguments, name) in [(["--port", "\(port)"], "the ChordStore port"), (["--port", "\(free)", "--grpc-port", "\(port)"], "the gRPC port")] {
            let result = try await runChordstore(["serve", "--data", data.path, "--http-port", "none"] + arguments, timeout: 30)
            #expect(result.status == 1 && result.stderr.contains("\(name) 127.0.0.1:\(port): Address already in use"), "\(result.stderr.suffix(400))")
            #expect(!result.stderr.contains("bind(descriptor"), "NIO's decorated bind error: \(result.stderr.suffix(400))")
        }
    }

    @Test("a promotion refused for want of a majority is not repeated: it raised the epoch once (it burned five)")
    func promoteOnce() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("promote-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = directory.appendingPathComponent("secret")
        try Data((String(repeating: "s", count: 40) + "\n").utf8).write(to: secret)
        _ = chmod(secret.path, 0o600)
        let ports = try LoopbackPorts.free(2)
        func start(_ index: Int, _ extra: [String]) throws -> Process {
            let process = Process()
            process.executableURL = try chordstoreExecutable()
            process.arguments = ["serve", "--data", directory.appendingPathComponent("n\(index)").path, "--port", "\(ports[index])",
                                 "--http-port", "none", "--peer", "127.0.0.1:\(ports[1 - index])", "--cluster-secret-file", secret.path] + extra
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }
        let leader = try start(0, [])
        defer { kill(leader.processIdentifier, SIGKILL) }
        try await Task.sleep(for: .milliseconds(500))
        let follower = try start(1, ["--follow", "127.0.0.1:\(ports[0])"])
        defer { kill(follower.processIdentifier, SIGTERM) }
        let token = ["CHORDSTORE_TOKEN_FILE": directory.appendingPathComponent("n1/admin.token").path]
        let asFollower = ["--server", "127.0.0.1:\(ports[1])", "--cluster-secret-file", secret.path]
        var following = false
        for _ in 0..<150 where !following {
            following = try await runChordstore(asFollower + ["status"], environment: token).stdout.contains("follower")
            if !following { try await Task.sleep(for: .milliseconds(100)) }
        }
        try #require(following, "the follower did not start")
        kill(leader.processIdentifier, SIGKILL)
        let promoted = try await runChordstore(asFollower + ["promote"], environment: token)
        #expect(promoted.status == 1 && promoted.stderr.contains("only 1 of 2 members took epoch 2;"), "\(promoted.stderr)")
    }

    /// A socket listening on a free port of 127.0.0.1 that accepts nobody, and its port.
    static func listener() throws -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else {
            close(fd)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Whether this machine has an IPv6 loopback address to bind.
    static let ipv6Loopback: Bool = {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0 }
        }
    }()

    @Test("--server takes an IPv6 address in brackets; a malformed --server is a usage error (64)")
    func serverAddresses() async throws {
        for wrong in ["::1:7420", "[::1]7420", "[]:7420", "[127.0.0.1]:7420", "host:0", "host"] {
            let refused = try await runChordstore(["--server", wrong, "profile"])
            #expect(refused.status == 64 && refused.stderr.contains("--server takes HOST:PORT or [IPV6]:PORT, not '\(wrong)'"), "\(wrong): \(refused.status) \(refused.stderr)")
        }
        // With --data, --server is not used: a wrong one in the environment does no harm.
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("remote-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        #expect(try await runChordstore(["--data", data.path, "add", "x"], environment: ["CHORDSTORE_SERVER": "nonsense"]).status == 0)
        guard Self.ipv6Loopback else { return }  // no ::1 here: nothing more to try

        let port = try LoopbackPorts.free(1)[0]
        let server = Process()
        server.executableURL = try chordstoreExecutable()
        server.arguments = ["serve", "--data", data.path + "-v6", "--host", "::1", "--port", "\(port)", "--http-port", "none"]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer {
            kill(server.processIdentifier, SIGTERM)
            try? FileManager.default.removeItem(atPath: data.path + "-v6")
        }
        // The admin token the server wrote, found as for any loopback server (and shown
        // to [::1]:PORT however the address is spelled inside the client).
        let local = ["CHORDSTORE_DATA": data.path + "-v6"]
        var added: RunResult?
        for _ in 0..<100 {
            let result = try await runChordstore(["--server", "[::1]:\(port)", "add", "over IPv6"], environment: local)
            if result.status == 0 { added = result; break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(added?.stdout.hasPrefix("added chordset ") == true)
        let list = try await runChordstore(["--server", "[::1]:\(port)", "list"], environment: local)
        #expect(list.stdout.contains("over IPv6"), "\(list.stderr)")
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
