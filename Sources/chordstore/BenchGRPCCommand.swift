import ChordStoreAPI
import ArgumentParser
import ChordStoreGRPC
import ChordStoreProto
import ChordStoreServer
import ChordStoreWire
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import SwiftProtobuf

/// `chordstore bench grpc`: load a server's standard gRPC endpoint, as `bench wire` loads
/// the framed port, with grpc-swift 2's client.
struct BenchGRPCCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "grpc",
        abstract: "Load a server's gRPC endpoint (serve --grpc-port): N connections, one call in flight each, for S seconds.",
        discussion: prose("""
            Each connection is a grpc-swift 2 client (HTTP/2 over TCP, plaintext) calling
            in a loop. Workloads: 'add' (durable AddChordset, one event each), 'get'
            (GetChordset of one chordset it adds first). The token comes from
            $CHORDSTORE_TOKEN or $CHORDSTORE_TOKEN_FILE. Prints calls/s and the
            p50/p99/p999 latency of a call, like 'bench wire'; tools/bench/compare runs it
            next to the framed protocol.
            """))

    enum Workload: String, ExpressibleByArgument, CaseIterable { case add, get }

    @Option(help: ArgumentHelp("The server's gRPC endpoint.", valueName: "HOST:PORT")) var server: String
    @Option(help: "Connections.") var connections = 1
    @Option(help: "Workload: add or get.") var workload: Workload = .get
    @Option(help: "Seconds to run (at most 120).") var seconds: Double = 5

    func validate() throws {
        guard (1...1_000).contains(connections) else { throw ValidationError("--connections must be 1...1000") }
        guard seconds > 0, seconds <= 120 else { throw ValidationError("--seconds must be in (0, 120]") }
        do { _ = try serverAddress(server) } catch { throw ValidationError("--server takes HOST:PORT, not '\(server)'") }
    }

    func run() async throws {
        let (host, port) = try serverAddress(server)
        let environment = ProcessInfo.processInfo.environment
        let token = try environment["CHORDSTORE_TOKEN_FILE"].map { try SecretFile.read($0, what: "a token") } ?? environment["CHORDSTORE_TOKEN"]
        var metadata: Metadata = [:]
        if let token { metadata.addString("Bearer \(token)", forKey: "authorization") }
        let call = GRPCCaller(metadata: metadata)

        let seed = try await withClient(host: host, port: port) { client in
            try await call(client, .addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "bench" })
        }
        let target = try Chordstore_V1_CommandReply(serializedBytes: seed).event.chordsetAdded.chordset.id
        let get = try Chordstore_V1_GetChordsetRequest.with { $0.chordsetID = target }.serializedBytes() as [UInt8]

        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
        let started = ContinuousClock.now
        let workload = self.workload
        let latencies = try await Latencies.gathering(workers: connections) { c in
            try await withClient(host: host, port: port) { client in
                try await Latencies.timing(until: deadline) { i in
                    switch workload {
                    case .add:
                        let request = Chordstore_V1_AddChordsetRequest.with { $0.title = "bench \(c)-\(i) " + String(repeating: "x", count: 40) }
                        _ = try await call(client, .addChordset, request)
                    case .get:
                        _ = try await call(client, .getChordset, bytes: get)
                    }
                }
            }
        }
        let elapsed = (ContinuousClock.now - started).seconds
        let calls = latencies.samples.count
        Output.print("grpc \(workload.rawValue): \(connections) connection(s), \(String(format: "%.1f", elapsed)) s, \(calls) calls")
        Output.print(latencies.callsLine(elapsed: elapsed))
    }

    /// Runs `body` with a client of its own (one HTTP/2 connection), then closes it.
    private func withClient<T: Sendable>(
        host: String, port: Int, _ body: (GRPCClient<HTTP2ClientTransport.Posix>) async throws -> T
    ) async throws -> T {
        let transport = try HTTP2ClientTransport.Posix(target: .dns(host: host, port: port), transportSecurity: .plaintext)
        return try await withGRPCClient(transport: transport) { client in try await body(client) }
    }
}

/// One unary call of the registry's `method` with the bench's metadata; its reply's bytes.
private struct GRPCCaller: Sendable {
    let metadata: Metadata

    func callAsFunction(
        _ client: GRPCClient<HTTP2ClientTransport.Posix>, _ method: ChordStoreAPI.Method, _ request: some SwiftProtobuf.Message
    ) async throws -> [UInt8] {
        try await callAsFunction(client, method, bytes: try request.serializedBytes())
    }

    func callAsFunction(_ client: GRPCClient<HTTP2ClientTransport.Posix>, _ method: ChordStoreAPI.Method, bytes: [UInt8]) async throws -> [UInt8] {
        try await client.unary(
            request: ClientRequest(message: bytes, metadata: metadata), descriptor: MethodDescriptor(method),
            serializer: RawMessageCoder(), deserializer: RawMessageCoder(), options: .defaults
        ) { response in try response.message }
    }
}
