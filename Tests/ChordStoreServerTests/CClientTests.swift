import ChordStoreServer
import Foundation
import TestSupport
import Testing

/// The C client (protobuf-c) against a live server: the wire format is language-neutral.
@Suite("C client")
struct CClientTests {
    /// The repository root, from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("the C client adds a chordset and lists it through the protocol")
    func addAndList() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("c-client-\(UUID().uuidString)")
        let build = try await runTool(Self.root.appendingPathComponent("tools/c-client/build").path, [output.path])
        #expect(build.status == 0, "\(build.output)")
        let client = output.appendingPathComponent("chordstore-c").path
        let first = try await runTool(client, ["127.0.0.1", "\(server.port)", "From C"])
        #expect(first.status == 0, "\(first.output)")
        #expect(first.output.contains("server: chordstore"))
        #expect(first.output.contains("at index 0 (event 1)"))
        let second = try await runTool(client, ["127.0.0.1", "\(server.port)", "Ünïcödé"])
        let lines = second.output.split(separator: "\n").filter { $0.hasPrefix("0 ") || $0.hasPrefix("1 ") }
        #expect(lines.count == 2)
        #expect(lines.last?.hasSuffix("Ünïcödé") == true)
        #expect(try server.store.chordsets().map(\.title) == ["From C", "Ünïcödé"])

        // --store: the calls name a store (Call.store), which keeps its own chordsets.
        try await server.store.createStore("c-side")
        let inStore = try await runTool(client, ["--store", "c-side", "127.0.0.1", "\(server.port)", "In a store"])
        #expect(inStore.status == 0, "\(inStore.output)")
        #expect(inStore.output.contains("at index 0 (event 1)"), "\(inStore.output)")
        #expect(try server.store.chordsets(store: "c-side").map(\.title) == ["In a store"])
        #expect(try server.store.chordsets().count == 2)
        let unknown = try await runTool(client, ["--store", "nowhere", "127.0.0.1", "\(server.port)", "lost"])
        #expect(unknown.status == 1)
        #expect(unknown.output.contains("error: 5 there is no store named nowhere"), "\(unknown.output)")
    }

    @Test("the C client shows a token and speaks TLS: refused without the token, served with it over TLS, and the load generator too")
    func tokenAndTLS() async throws {
        let certificates = try TestCertificates.make()
        defer { try? FileManager.default.removeItem(at: certificates.directory) }
        var security = SecurityTests.secured
        security.tls = try ServerTLS(certificateFile: certificates.serverCertificate, keyFile: certificates.serverKey)
        let server = try await TestServer.start(security: security)
        defer { Task { await server.stop() } }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("c-client-\(UUID().uuidString)")
        let build = try await runTool(Self.root.appendingPathComponent("tools/c-client/build").path, [output.path])
        #expect(build.status == 0, "\(build.output)")
        let tokenFile = output.appendingPathComponent("token")
        try Data((SecurityTests.adminSecret + "\n").utf8).write(to: tokenFile)
        let client = output.appendingPathComponent("chordstore-c").path
        let noToken = try await runTool(client, ["--tls-ca", certificates.ca, "127.0.0.1", "\(server.port)", "refused"])
        #expect(noToken.status == 1)
        #expect(noToken.output.contains("error: 16"), "\(noToken.output)")
        let served = try await runTool(client, ["--token-file", tokenFile.path, "--tls-ca", certificates.ca, "127.0.0.1", "\(server.port)", "Over TLS"])
        #expect(served.status == 0, "\(served.output)")
        #expect(try server.store.chordsets().map(\.title) == ["Over TLS"])
        let wrongCA = try await runTool(client, ["--token-file", tokenFile.path, "--tls-ca", certificates.otherCA, "127.0.0.1", "\(server.port)", "no"])
        #expect(wrongCA.status == 2)
        #expect(wrongCA.output.contains("TLS handshake"), "\(wrongCA.output)")
        let load = try await runTool(
            output.appendingPathComponent("wire-load").path, ["127.0.0.1", "\(server.port)", "add", "2", "0.3"],
            environment: ["CHORDSTORE_TOKEN_FILE": tokenFile.path, "WIRE_LOAD_TLS_CA": certificates.ca])
        #expect(load.status == 0, "\(load.output)")
    }

    @Test("the C load generator (tools/bench/wire-load.c) drives adds and reads and reports them")
    func loadGenerator() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("c-client-\(UUID().uuidString)")
        let build = try await runTool(Self.root.appendingPathComponent("tools/c-client/build").path, [output.path])
        #expect(build.status == 0, "\(build.output)")
        let load = output.appendingPathComponent("wire-load").path
        for workload in ["add", "get"] {
            let result = try await runTool(load, ["127.0.0.1", "\(server.port)", workload, "2", "0.3"])
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("wire \(workload): 2 connection(s)"), "\(result.output)")
            #expect(result.output.contains("calls/s; latency p50"), "\(result.output)")
        }
        // Each run adds its set-up chordset; the add run added more.
        #expect(try server.store.chordsets().count > 2)
        let usage = try await runTool(load, ["127.0.0.1", "\(server.port)", "delete", "1", "1"])
        #expect(usage.status == 2)
    }
}
