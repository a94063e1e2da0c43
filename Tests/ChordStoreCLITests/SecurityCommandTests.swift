import Foundation
import TestSupport
import Testing

/// The security of `chordstore serve` and the CLI, as a user meets it (docs/SECURITY.md).
@Suite("Security from the command line")
struct SecurityCommandTests {
    @Test("serve refuses --auth none off loopback, TLS halves, and a cluster without a secret, saying why")
    func unsafeSetUpsAreRefused() async throws {
        for (arguments, message) in [
            (["--host", "0.0.0.0", "--auth", "none"], "--auth none lets anyone who reaches the port read and change every store"),
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
