import ChordStoreClient
import Foundation
import TestSupport
import Testing

/// The security of `chordstore serve` and the CLI, as a user meets it (docs/SECURITY.md).
@Suite("Security from the command line")
struct SecurityCommandTests {
    @Test("serve refuses --auth none off loopback, TLS halves, and a cluster without a secret, saying why")
    func unsafeSetUpsAreRefused() async throws {
        for (arguments, message) in [
            (["--host", "0.0.0.0", "--auth", "none"], "--auth none lets anyone who reaches the server read and change every store"),
            // Every listener counts: the JSON calls of the HTTP endpoint too (issue 39).
            (["--auth", "none", "--http-host", "192.0.2.1", "--http-port", "17421"], "and --http-host is 192.0.2.1"),
            (["--auth", "none", "--http-host", "0.0.0.0"], "and --http-host is 0.0.0.0"),
            (["--auth", "none", "--host", "::", "--grpc-port", "0", "--http-port", "none"], "and --host is ::"),
            (["--auth", "maybe"], "--auth is tokens or none"),
            (["--tls-cert", "x.pem"], "--tls-cert and --tls-key go together"),
            (["--tls-client-ca", "ca.pem"], "--tls-client-ca and --tls-ca need TLS"),
            (["--follow", "127.0.0.1:1", "--advertise", "127.0.0.1:2"], "a cluster member needs --cluster-secret-file FILE"),
        ] {
            let result = try await runChordstore(["serve", "--port", "0"] + arguments)
            #expect(result.status != 0)
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
    }

    @Test("on first start serve writes DATA/admin.token (0600); the CLI finds it; without it a call is UNAUTHENTICATED; tokens made, used, listed and revoked")
    func localAdminTokenAndTokenVerbs() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("security-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let (server, port, log) = try await ServerCrashTests.serve(data, [])
        defer { server.terminate() }
        let tokenFile = data.appendingPathComponent("admin.token")
        let attributes = try FileManager.default.attributesOfItem(atPath: tokenFile.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(log.text.contains("admin.token"), "\(log.text)")
        #expect(!log.text.contains(try String(contentsOf: tokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        let server_ = ["--server", "127.0.0.1:\(port)"]
        let nowhere = ["CHORDSTORE_DATA": data.appendingPathComponent("elsewhere").path]
        let local = ["CHORDSTORE_DATA": data.path]

        let refused = try await runChordstore(server_ + ["list"], environment: nowhere)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("UNAUTHENTICATED: this call needs a token"), "\(refused.stderr)")
        #expect(refused.stderr.contains("--token-file"), "\(refused.stderr)")

        let added = try await runChordstore(server_ + ["add", "Verse"], environment: local)
        #expect(added.status == 0, "\(added.stderr)")
        let store = try await runChordstore(server_ + ["store", "create", "a"], environment: local)
        #expect(store.status == 0, "\(store.stderr)")
        let created = try await runChordstore(server_ + ["token", "create", "--role", "read-only", "--store", "a"], environment: local)
        #expect(created.status == 0, "\(created.stderr)")
        let secret = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(secret.hasPrefix("cs1."))
        let id = String(secret.split(separator: ".")[1])
        let readOnly = data.appendingPathComponent("ro.token")
        try Data((secret + "\n").utf8).write(to: readOnly)

        let listA = try await runChordstore(server_ + ["--token-file", readOnly.path, "--store", "a", "list"], environment: nowhere)
        #expect(listA.status == 0, "\(listA.stderr)")
        let addA = try await runChordstore(server_ + ["--token-file", readOnly.path, "--store", "a", "add", "No"], environment: nowhere)
        #expect(addA.status == 1)
        #expect(addA.stderr.contains("PERMISSION_DENIED"), "\(addA.stderr)")
        let listDefault = try await runChordstore(server_ + ["list"], environment: nowhere.merging(["CHORDSTORE_TOKEN": secret]) { $1 })
        #expect(listDefault.stderr.contains("PERMISSION_DENIED"), "\(listDefault.stderr)")
        // store info names the store asked about: the store's own token may ask without
        // --store, and a refusal names that store, not the default one.
        let infoA = try await runChordstore(server_ + ["--token-file", readOnly.path, "store", "info", "a"], environment: nowhere)
        #expect(infoA.status == 0 && infoA.stdout.hasPrefix("a  "), "\(infoA.stdout)\(infoA.stderr)")
        let infoDefault = try await runChordstore(server_ + ["--token-file", readOnly.path, "store", "info", "default"], environment: nowhere)
        #expect(infoDefault.status == 1 && infoDefault.stderr.contains("not on default"), "\(infoDefault.stderr)")

        // --out: a new file of mode 0600, never an existing one.
        let outFile = data.appendingPathComponent("rw.token")
        let written = try await runChordstore(server_ + ["token", "create", "--role", "read-write", "--store", "a", "--out", outFile.path], environment: local)
        #expect(written.status == 0, "\(written.stderr)")
        #expect(written.stdout.isEmpty)
        #expect((try FileManager.default.attributesOfItem(atPath: outFile.path)[.posixPermissions] as? Int) == 0o600)
        let again = try await runChordstore(server_ + ["token", "create", "--role", "admin", "--out", outFile.path], environment: local)
        #expect(again.status != 0)
        #expect(again.stderr.contains("exists"), "\(again.stderr)")

        let tokens = try await runChordstore(server_ + ["token", "list"], environment: local)
        #expect(tokens.stdout.contains("local-admin  admin"), "\(tokens.stdout)")
        #expect(tokens.stdout.contains("\(id)  read-only a"), "\(tokens.stdout)")
        #expect(!tokens.stdout.contains(secret))

        // Who did it: the add's event names the local admin token.
        let history = try await runChordstore(server_ + ["log"], environment: local)
        #expect(history.stdout.contains("[token local-admin]"), "\(history.stdout)")

        let revoked = try await runChordstore(server_ + ["token", "revoke", id], environment: local)
        #expect(revoked.status == 0, "\(revoked.stderr)")
        let after = try await runChordstore(server_ + ["--token-file", readOnly.path, "--store", "a", "list"], environment: nowhere)
        #expect(after.status == 1)
        #expect(after.stderr.contains("UNAUTHENTICATED"), "\(after.stderr)")
    }

    @Test("the admin token the CLI finds on this machine never follows a follower's redirect to a leader elsewhere; a token given explicitly does")
    func foundTokenStaysWithItsServer() async throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("security-redirect-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        let secret = base.appendingPathComponent("cluster.secret")
        try Data((String(repeating: "5e", count: 32) + "\n").utf8).write(to: secret)
        chmod(secret.path, 0o600)
        let (leaderData, followerData) = (base.appendingPathComponent("leader"), base.appendingPathComponent("follower"))
        let ports = try LoopbackPorts.free(2)
        // The leader is advertised by a host name: to the CLI, another machine.
        let leaderName = "localhost:\(ports[0])"
        let leader = try await ServedChordstore.start(leaderData, [
            "--advertise", leaderName, "--peer", "127.0.0.1:\(ports[1])", "--port", "\(ports[0])", "--cluster-secret-file", secret.path,
        ])
        defer { leader.stopIfRunning() }
        let onLeader = ["CHORDSTORE_DATA": leaderData.path]
        #expect(await eventually { (try? await runChordstore(["--server", "127.0.0.1:\(ports[0])", "add", "first"], environment: onLeader))?.status == 0 })
        let follower = try await ServedChordstore.start(followerData, [
            "--follow", leaderName, "--advertise", "127.0.0.1:\(ports[1])", "--peer", leaderName, "--port", "\(ports[1])",
            "--cluster-secret-file", secret.path,
        ])
        defer { follower.stopIfRunning() }
        let toFollower = ["--server", "127.0.0.1:\(ports[1])"]

        let found = try await runChordstore(toFollower + ["add", "redirected"], environment: ["CHORDSTORE_DATA": followerData.path])
        #expect(found.status == 1)
        #expect(found.stderr.contains("UNAUTHENTICATED") && found.stderr.contains("shown only to 127.0.0.1:\(ports[1]), not to \(leaderName)"), "\(found.stderr)")
        #expect(found.stderr.contains("--token-file"), "\(found.stderr)")
        #expect(!leader.log.text.contains("authentication failed"), "the leader was shown no token: \(leader.log.text)")

        // A token given explicitly is the user's to send: it follows the redirect.
        let created = try await runChordstore(["--server", "127.0.0.1:\(ports[0])", "token", "create", "--role", "admin"], environment: onLeader)
        #expect(created.status == 0, "\(created.stderr)")
        let token = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(await eventually {  // once the token has replicated to the follower
            (try? await runChordstore(toFollower + ["--token", token, "add", "explicit"]))?.status == 0
        })
        #expect(try await follower.terminate() == 0)
        #expect(try await leader.terminate() == 0)
    }

    @Test("what serve, backup, export and replica write is their user's alone; a data directory others may write to is refused, one they may read is warned of")
    func filesAreTheOwners() async throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("security-modes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        func mode(_ url: URL) -> Int? { (try? FileManager.default.attributesOfItem(atPath: url.path))?[.posixPermissions] as? Int }
        let data = base.appendingPathComponent("data")
        let served = try await ServedChordstore.start(data, [])
        defer { served.stopIfRunning() }
        let local = ["CHORDSTORE_DATA": data.path]
        let server = ["--server", "127.0.0.1:\(served.port)"]
        #expect(try await runChordstore(server + ["add", "Mine"], environment: local).status == 0)
        let backup = base.appendingPathComponent("backup"), export = base.appendingPathComponent("export.jsonl")
        #expect(try await runChordstore(server + ["backup", "--to", backup.path], environment: local).status == 0)
        #expect(try await runChordstore(server + ["export", "--out", export.path], environment: local).status == 0)
        let replica = base.appendingPathComponent("replica")
        #expect(try await runChordstore(["replica", "--dir", replica.path, "--store", "default", "add", "Offline"]).status == 0)
        for directory in [data, data.appendingPathComponent("views"), backup, backup.appendingPathComponent("views"), replica] {
            #expect(mode(directory) == 0o700, "\(directory.path): \(String(mode(directory) ?? 0, radix: 8))")
        }
        for file in ["data.mdb", "lock.mdb", "views/data.mdb", "views/lock.mdb", "admin.token", "chordstore.lock"].map({ data.appendingPathComponent($0) })
            + ["data.mdb", "views/data.mdb"].map({ backup.appendingPathComponent($0) }) + [export] {
            #expect(mode(file) == 0o600, "\(file.path): \(String(mode(file) ?? 0, radix: 8))")
        }
        #expect(!served.log.text.contains("other users may read"), "\(served.log.text)")
        #expect(try await served.terminate() == 0)

        chmod(data.path, 0o777)
        let refused = try await runChordstore(["serve", "--data", data.path, "--port", "0", "--http-port", "none"])
        #expect(refused.status != 0 && refused.stderr.contains("other users may write to the data directory"), "\(refused.stderr)")
        let open = base.appendingPathComponent("open")
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: true)
        chmod(open.path, 0o777)
        let untouched = try await runChordstore(["serve", "--data", open.path, "--port", "0", "--http-port", "none"])
        let written = try FileManager.default.contentsOfDirectory(atPath: open.path)
        #expect(untouched.status != 0 && written.isEmpty,
                "nothing, the admin token least of all, is written into a directory others may write to: \(untouched.stderr)")
        let direct = try await runChordstore(["--data", data.path, "list"])
        #expect(direct.status == 1 && direct.stderr.contains("chmod 700"), "\(direct.stderr)")

        chmod(data.path, 0o755)
        let readable = try await ServedChordstore.start(data, [])
        defer { readable.stopIfRunning() }
        #expect(readable.log.text.contains("other users may read \(data.path)"), "\(readable.log.text)")
        #expect(try await readable.terminate() == 0)
    }

    @Test("a TLS server accepts the CLI with --tls-ca and refuses a plaintext CLI")
    func tlsServe() async throws {
        let certificates = try TestCertificates.make()
        defer { try? FileManager.default.removeItem(at: certificates.directory) }
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("security-tls-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let (server, port, _) = try await ServerCrashTests.serve(
            data, ["--tls-cert", certificates.serverCertificate, "--tls-key", certificates.serverKey])
        defer { server.terminate() }
        let environment = ["CHORDSTORE_DATA": data.path]
        let tls = try await runChordstore(["--server", "127.0.0.1:\(port)", "--tls-ca", certificates.ca, "add", "Secure"], environment: environment)
        #expect(tls.status == 0, "\(tls.stderr)")
        let plain = try await runChordstore(["--server", "127.0.0.1:\(port)", "list"], environment: environment, timeout: 30)
        #expect(plain.status != 0)
        let wrong = try await runChordstore(["--server", "127.0.0.1:\(port)", "--tls-ca", certificates.otherCA, "list"], environment: environment)
        #expect(wrong.status != 0)
    }
}
