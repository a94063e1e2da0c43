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
        let build = try await run(Self.root.appendingPathComponent("tools/c-client/build").path, [output.path])
        #expect(build.status == 0, "\(build.output)")
        let client = output.appendingPathComponent("chordstore-c").path
        let first = try await run(client, ["127.0.0.1", "\(server.port)", "From C"])
        #expect(first.status == 0, "\(first.output)")
        #expect(first.output.contains("server: chordstore"))
        #expect(first.output.contains("at index 0 (event 1)"))
        let second = try await run(client, ["127.0.0.1", "\(server.port)", "Ünïcödé"])
        let lines = second.output.split(separator: "\n").filter { $0.hasPrefix("0 ") || $0.hasPrefix("1 ") }
        #expect(lines.count == 2)
        #expect(lines.last?.hasSuffix("Ünïcödé") == true)
        #expect(try server.store.chordsets().map(\.title) == ["From C", "Ünïcödé"])

        // --store: the calls name a store (Call.store), which keeps its own chordsets.
        try await server.store.createStore("c-side")
        let inStore = try await run(client, ["--store", "c-side", "127.0.0.1", "\(server.port)", "In a store"])
        #expect(inStore.status == 0, "\(inStore.output)")
        #expect(inStore.output.contains("at index 0 (event 1)"), "\(inStore.output)")
        #expect(try server.store.chordsets(store: "c-side").map(\.title) == ["In a store"])
        #expect(try server.store.chordsets().count == 2)
        let unknown = try await run(client, ["--store", "nowhere", "127.0.0.1", "\(server.port)", "lost"])
        #expect(unknown.status == 1)
        #expect(unknown.output.contains("error: 5 there is no store named nowhere"), "\(unknown.output)")
    }

    @Test("the C load generator (tools/bench/wire-load.c) drives adds and reads and reports them")
    func loadGenerator() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("c-client-\(UUID().uuidString)")
        let build = try await run(Self.root.appendingPathComponent("tools/c-client/build").path, [output.path])
        #expect(build.status == 0, "\(build.output)")
        let load = output.appendingPathComponent("wire-load").path
        for workload in ["add", "get"] {
            let result = try await run(load, ["127.0.0.1", "\(server.port)", workload, "2", "0.3"])
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("wire \(workload): 2 connection(s)"), "\(result.output)")
            #expect(result.output.contains("calls/s; latency p50"), "\(result.output)")
        }
        // Each run adds its set-up chordset; the add run added more.
        #expect(try server.store.chordsets().count > 2)
        let usage = try await run(load, ["127.0.0.1", "\(server.port)", "delete", "1", "1"])
        #expect(usage.status == 2)
    }

    private func run(_ executable: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await offPool {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
    }
}
