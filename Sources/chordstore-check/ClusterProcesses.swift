import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The `chordstore serve` processes of a test cluster: started, killed, stopped,
/// continued and restarted by name, each with its own data directory, address and log
/// file, and, for network partitions, its own network namespace.
final class ClusterProcesses: @unchecked Sendable {
    struct Node {
        var name: String
        /// Its advertised `HOST:PORT`.
        var address: String
        var arguments: [String]
        /// What runs `chordstore` (empty: itself; `ip netns exec NS`: in a namespace).
        var launcher: [String] = []
        var process: Process?
        var stopped = false
    }

    private let lock = NSLock()
    private var nodes: [Node]
    let executable: URL
    let directory: URL

    /// A cluster of `nodes`, not started.
    init(executable: URL, directory: URL, nodes: [Node]) {
        self.executable = executable
        self.directory = directory
        self.nodes = nodes
    }

    /// Plans `count` nodes on 127.0.0.1: n1 leads, the others follow it; every node lists
    /// the others as peers.
    convenience init(executable: URL, directory: URL, count: Int, durability: String, ports: [Int]) {
        let addresses = ports.map { "127.0.0.1:\($0)" }
        let nodes = (0..<count).map { index in
            var arguments = [
                "serve", "--data", directory.appendingPathComponent("n\(index + 1)").path, "--host", "127.0.0.1",
                "--port", "\(ports[index])", "--advertise", addresses[index], "--node", "n\(index + 1)",
                "--durability", durability, "--log-level", "notice", "--http-port", "none",
                // Loopback only: the check is about replication under faults, not credentials.
                "--auth", "none",
            ]
            for (other, address) in addresses.enumerated() where other != index { arguments += ["--peer", address] }
            if index > 0 { arguments += ["--follow", addresses[0]] }
            return Node(name: "n\(index + 1)", address: addresses[index], arguments: arguments)
        }
        self.init(executable: executable, directory: directory, nodes: nodes)
    }

    var names: [String] { lock.withLock { nodes.map(\.name) } }

    /// Every node's advertised address, in order.
    var addresses: [String] { lock.withLock { nodes.map(\.address) } }

    func address(_ name: String) -> String? {
        lock.withLock { nodes.first { $0.name == name }?.address }
    }

    /// The name of the node advertised at `address`.
    func name(at address: String) -> String? {
        lock.withLock { nodes.first { $0.address == address }?.name }
    }

    /// Starts every node.
    func startAll() throws {
        for name in names { try start(name) }
    }

    /// Starts (or restarts) `name` with its planned arguments, appending to its log.
    func start(_ name: String) throws {
        try lock.withLock {
            guard let index = nodes.firstIndex(where: { $0.name == name }) else { throw CheckFailure("no node \(name)") }
            if let process = nodes[index].process, process.isRunning { return }
            let log = directory.appendingPathComponent("\(name).log")
            if !FileManager.default.fileExists(atPath: log.path) { _ = FileManager.default.createFile(atPath: log.path, contents: nil) }
            let handle = try FileHandle(forWritingTo: log)
            handle.seekToEndOfFile()
            let process = Process()
            let launcher = nodes[index].launcher
            process.executableURL = launcher.first.map { URL(fileURLWithPath: $0) } ?? executable
            process.arguments = launcher.isEmpty ? nodes[index].arguments : Array(launcher.dropFirst()) + [executable.path] + nodes[index].arguments
            process.standardOutput = handle
            process.standardError = handle
            try process.run()
            nodes[index].process = process
            nodes[index].stopped = false
        }
    }

    /// Sends `signal` to every node of `names` at once, then (for SIGKILL and SIGTERM)
    /// waits for them to end, so that no write slips in between two of them.
    func signal(_ names: [String], _ signal: Int32) throws {
        let processes: [Process] = try lock.withLock {
            try names.compactMap { name in
                guard let index = nodes.firstIndex(where: { $0.name == name }) else { throw CheckFailure("no node \(name)") }
                if signal == SIGSTOP { nodes[index].stopped = true }
                if signal == SIGCONT { nodes[index].stopped = false }
                return nodes[index].process
            }
        }
        let running = processes.filter(\.isRunning)
        for process in running { kill(process.processIdentifier, signal) }
        if signal == SIGKILL || signal == SIGTERM {
            for process in running { process.waitUntilExit() }
        }
    }

    /// Continues stopped nodes and restarts dead ones.
    func healAll() throws {
        for name in names {
            let (stopped, running) = lock.withLock { () -> (Bool, Bool) in
                let node = nodes.first { $0.name == name }
                return (node?.stopped ?? false, node?.process?.isRunning ?? false)
            }
            if stopped { try signal([name], SIGCONT) }
            if !running { try start(name) }
        }
    }

    /// Stops every node (SIGCONT first, then SIGTERM, SIGKILL after 10 s).
    func stopAll() {
        for name in names {
            let process = lock.withLock { nodes.first { $0.name == name }?.process }
            guard let process, process.isRunning else { continue }
            kill(process.processIdentifier, SIGCONT)
            kill(process.processIdentifier, SIGTERM)
            let deadline = Date().addingTimeInterval(10)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }
}
