import ChordStoreAPI
import ArgumentParser
@_spi(Raw) import ChordStoreClient
import ChordStoreProto
import ChordStoreServer
import ChordStoreWire
import Foundation
import SwiftProtobuf

/// `chordstore bench wire`: load over the real protocol.
struct BenchWireCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wire",
        abstract: "Load a server over the protocol: N connections, D calls in flight each, for S seconds.",
        discussion: prose("""
            Without --server, starts 'chordstore serve' on a fresh temporary data directory
            (a separate process on 127.0.0.1, stopped afterwards). Workloads: 'add' (durable
            AddChordset, one event each), 'get' (GetChordset of one chordset), 'mix'
            (90% get, 10% add). Prints calls/s and the p50/p99/p999 latency of a call.
            """))

    enum Workload: String, ExpressibleByArgument, CaseIterable { case add, get, mix }

    @Option(help: ArgumentHelp("Load this server instead of starting one.", valueName: "HOST:PORT")) var server: String?
    @Option(help: "Connections.") var connections = 1
    @Option(help: "Calls in flight per connection (pipelining depth).") var depth = 1
    @Option(help: "Workload: add, get or mix.") var workload: Workload = .get
    @Option(help: "Seconds to run (at most 120).") var seconds: Double = 5

    func validate() throws {
        guard (1...1_000).contains(connections) else { throw ValidationError("--connections must be 1...1000") }
        guard (1...256).contains(depth) else { throw ValidationError("--depth must be 1...256") }
        guard seconds > 0, seconds <= 120 else { throw ValidationError("--seconds must be in (0, 120]") }
    }

    func run() async throws {
        let child = server == nil ? try await ChildServer.start() : nil
        defer { child?.stop() }
        let address = server ?? "127.0.0.1:\(child!.port)"
        let (host, port): (String, Int)
        do { (host, port) = try serverAddress(address) } catch { throw Failure(error) }

        // The child server's own admin token; a server given with --server takes
        // $CHORDSTORE_TOKEN or $CHORDSTORE_TOKEN_FILE.
        let environment = ProcessInfo.processInfo.environment
        let tokenFile = child.map { $0.directory.appendingPathComponent("admin.token").path } ?? environment["CHORDSTORE_TOKEN_FILE"]
        let token = try tokenFile.map { try SecretFile.read($0, what: "a token") } ?? environment["CHORDSTORE_TOKEN"]
        let credentials = ClientCredentials(token: token)
        let setup = try await Connection.connect(host: host, port: port, credentials: credentials)
        let seed: Chordstore_V1_CommandReply = try await setup.call(.addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "bench" })
        let target = seed.event.chordsetAdded.chordset.id
        await setup.close()

        var clients: [Connection] = []
        for _ in 0..<connections { clients.append(try await Connection.connect(host: host, port: port, credentials: credentials)) }
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
        let started = ContinuousClock.now
        let workload = self.workload
        let depth = self.depth
        let connected = clients
        let latencies = try await Latencies.gathering(workers: connected.count * depth) { worker in
            let (c, d) = worker.quotientAndRemainder(dividingBy: depth)
            let client = connected[c]
            return try await Latencies.timing(until: deadline) { i in
                if workload == .add || (workload == .mix && i % 10 == 0) {
                    let request = Chordstore_V1_AddChordsetRequest.with {
                        $0.title = "bench \(c)-\(d)-\(i) " + String(repeating: "x", count: 40)
                    }
                    _ = try await client.call(.addChordset, request, as: Chordstore_V1_CommandReply.self)
                } else {
                    _ = try await client.call(
                        .getChordset, Chordstore_V1_GetChordsetRequest.with { $0.chordsetID = target },
                        as: Chordstore_V1_Chordset.self)
                }
            }
        }
        let elapsed = (ContinuousClock.now - started).seconds
        for client in clients { await client.close() }
        let calls = latencies.samples.count
        Output.print("wire \(workload.rawValue): \(connections) connection(s) × depth \(depth), \(String(format: "%.1f", elapsed)) s, \(calls) calls")
        Output.print(latencies.callsLine(elapsed: elapsed))
    }
}

/// A `chordstore serve` child process on a fresh temporary directory and a free port.
final class ChildServer: @unchecked Sendable {
    let process: Process
    let port: Int
    let directory: URL

    private init(process: Process, port: Int, directory: URL) {
        self.process = process
        self.port = port
        self.directory = directory
    }

    /// What a client shows the child: its admin token (from its data directory).
    var credentials: ClientCredentials {
        ClientCredentials(token: try? SecretFile.read(directory.appendingPathComponent("admin.token").path, what: "the admin token"))
    }

    static func start() async throws -> ChildServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("chordstore-bench-\(UUID().uuidString)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.resolvingSymlinksInPath()
        if !FileManager.default.isExecutableFile(atPath: process.executableURL!.path) {
            process.executableURL = Bundle.main.executableURL
        }
        process.arguments = ["serve", "--data", directory.path, "--port", "0", "--log-level", "notice", "--http-port", "none"]
        let pipe = Pipe()
        process.standardError = pipe
        try process.run()
        let reader = pipe.fileHandleForReading
        var text = ""
        let start = Date()
        while Date().timeIntervalSince(start) < 30 {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
            if let range = text.range(of: #"address=127\.0\.0\.1:(\d+)"#, options: .regularExpression),
               let port = Int(text[range].split(separator: ":").last ?? "") {
                return ChildServer(process: process, port: port, directory: directory)
            }
        }
        process.terminate()
        throw ValidationError("the server did not start: \(text)")
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}
