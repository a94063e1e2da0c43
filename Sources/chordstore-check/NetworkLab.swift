import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A network of the checker's own for partitions: a bridge on this machine
/// (`10.S.0.1/24`) and, for each node, a network namespace joined to it by a veth pair
/// (node i at `10.S.0.(10+i)`). Cutting a node takes its end of the bridge down: it
/// then reaches nothing (etcd, the other members, clients) and nothing reaches it, while
/// its process runs on. Needs root and iproute2; ``tearDown()`` removes everything.
final class NetworkLab: @unchecked Sendable {
    /// The names' prefix: `cs` and four characters of the run's id.
    let prefix: String
    /// The second octet of the lab's `10.S.0.0/24`.
    let subnet: Int
    let nodes: Int
    private var made: [[String]] = []

    /// Why the lab cannot be made here, or `nil` if it can (checked by making and
    /// removing a namespace).
    static func unavailable() -> String? {
        guard getuid() == 0 else { return "network partitions need root (network namespaces and veth pairs)" }
        guard let ip = ipPath else { return "network partitions need iproute2's ip (apt-get install iproute2)" }
        let probe = "csprobe\(getpid() % 100_000)"
        guard run(ip, ["netns", "add", probe]) == 0 else { return "ip netns add failed: network namespaces are not allowed here" }
        _ = run(ip, ["netns", "del", probe])
        return nil
    }

    static let ipPath = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Makes the bridge and `nodes` namespaces joined to it.
    init(runID: String, nodes: Int) throws {
        prefix = "cs" + String(runID.suffix(4))
        self.nodes = nodes
        let used = Self.output(Self.ipPath ?? "ip", ["-4", "addr"])
        subnet = (100...250).shuffled().first { !used.contains("10.\($0).0.") } ?? 199
        do {
            try ip(["link", "add", bridge, "type", "bridge"], undo: ["link", "del", bridge])
            try ip(["addr", "add", "\(hostAddress)/24", "dev", bridge])
            try ip(["link", "set", bridge, "up"])
            for node in 1...nodes {
                let namespace = self.namespace(node)
                try ip(["netns", "add", namespace], undo: ["netns", "del", namespace])
                try ip(["link", "add", hostEnd(node), "type", "veth", "peer", "name", nodeEnd(node)], undo: ["link", "del", hostEnd(node)])
                try ip(["link", "set", nodeEnd(node), "netns", namespace])
                try ip(["link", "set", hostEnd(node), "master", bridge])
                try ip(["link", "set", hostEnd(node), "up"])
                try ip(["netns", "exec", namespace, Self.ipPath ?? "ip", "addr", "add", "\(address(node))/24", "dev", nodeEnd(node)])
                try ip(["netns", "exec", namespace, Self.ipPath ?? "ip", "link", "set", nodeEnd(node), "up"])
                try ip(["netns", "exec", namespace, Self.ipPath ?? "ip", "link", "set", "lo", "up"])
            }
        } catch {
            tearDown()
            throw error
        }
    }

    var bridge: String { "\(prefix)br" }
    /// This machine's address on the bridge (where etcd listens).
    var hostAddress: String { "10.\(subnet).0.1" }
    func namespace(_ node: Int) -> String { "\(prefix)n\(node)" }
    func address(_ node: Int) -> String { "10.\(subnet).0.\(10 + node)" }
    private func hostEnd(_ node: Int) -> String { "\(prefix)h\(node)" }
    private func nodeEnd(_ node: Int) -> String { "\(prefix)c\(node)" }

    /// What runs a program in node `node`'s namespace.
    func launcher(_ node: Int) -> [String] { [Self.ipPath ?? "ip", "netns", "exec", namespace(node)] }

    /// Cuts node `node` off from everything.
    func cut(_ node: Int) throws { try ip(["link", "set", hostEnd(node), "down"]) }

    /// Joins node `node` to the bridge again.
    func heal(_ node: Int) throws {
        try ip(["link", "set", hostEnd(node), "up"])
        try ip(["link", "set", hostEnd(node), "master", bridge])
    }

    /// Removes the namespaces and the bridge.
    func tearDown() {
        for undo in made.reversed() { _ = Self.run(Self.ipPath ?? "ip", undo) }
        made = []
    }

    private func ip(_ arguments: [String], undo: [String]? = nil) throws {
        let status = Self.run(Self.ipPath ?? "ip", arguments)
        guard status == 0 else { throw CheckFailure("ip \(arguments.joined(separator: " ")) failed (status \(status))") }
        if let undo { made.append(undo) }
    }

    @discardableResult
    static func run(_ executable: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    static func output(_ executable: String, _ arguments: [String]) -> String {
        let process = Process()
        let pipe = Pipe()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return "" }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
