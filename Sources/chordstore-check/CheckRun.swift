import ChordStoreAPI
import ChordStoreDomain
import ArgumentParser
@_spi(Raw) import ChordStoreClient
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One run of the checker.
final class CheckRun: @unchecked Sendable {
    private let options: ScheduledCheck
    private let cluster: ClusterProcesses
    private let faults: [Fault]
    private let started = ContinuousClock.now
    private let state = Mutex(Shared())
    private let runID = String(UInt32.random(in: 0 ... .max), radix: 36)

    private struct Shared {
        var nextWrite = 0
        var target = ""
        var attempts: [CheckAnalysis.Attempt] = []
        var failures: [String: Int] = [:]
        var slowestFailure: Duration = .zero
    }

    init(_ options: ScheduledCheck) throws {
        self.options = options
        let executable = options.chordstore.map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("chordstore")
        guard FileManager.default.isExecutableFile(atPath: executable.path) else { throw CheckFailure("no chordstore executable at \(executable.path); give --chordstore") }
        let directory = URL(fileURLWithPath: options.dir)
        if let existing = try? FileManager.default.contentsOfDirectory(atPath: directory.path), !existing.isEmpty {
            throw CheckFailure("\(directory.path) is not empty")
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        cluster = ClusterProcesses(
            executable: executable, directory: directory, count: options.nodes, durability: options.durability,
            ports: try LoopbackPorts.free(options.nodes))
        faults = try options.faultTexts.map(Fault.init(parsing:)).sorted { $0.at < $1.at }
    }

    func run() async throws -> CheckReport {
        defer { cluster.stopAll() }
        try cluster.startAll()
        try await waitForLeader()
        state.withLock { $0.target = cluster.address("n1") ?? "" }
        progress("cluster of \(options.nodes) up; \(options.clients) clients writing \(options.writes) times (\(options.durability))")
        let injector = Task { try await injectFaults() }
        await withTaskGroup(of: Void.self) { group in
            for client in 0..<options.clients {
                group.addTask { await self.write(as: client) }
            }
        }
        injector.cancel()
        _ = try? await injector.value
        progress("writes done; healing")
        try cluster.healAll()
        let statuses = try await converge()
        return try await report(statuses)
    }

    // MARK: Writing

    private func write(as client: Int) async {
        var clients: [String: Client] = [:]
        defer { for client in clients.values { Task { await client.close() } } }
        var index = 0
        while ContinuousClock.now - started < .seconds(options.maxSeconds) {
            let (number, target) = state.withLock { shared -> (Int, String) in
                defer { shared.nextWrite += 1 }
                return (shared.nextWrite, shared.target)
            }
            guard number < options.writes else { return }
            let title = "check-\(runID)-c\(client)-\(index)"
            guard let connection = clients[target] ?? Client(address: target) else { return }
            clients[target] = connection
            let began = ContinuousClock.now
            var acked: UInt64?
            do {
                let write = WriteOptions(
                    commandID: title, durability: options.durability == "quorum" ? .quorum : .local, timeout: .milliseconds(options.timeoutMs))
                acked = try await connection.execute(.addChordset(AddChordset(title: title)), options: write).sequence
            } catch {
                let elapsed = ContinuousClock.now - began
                let code = error.code.description
                state.withLock { shared in
                    shared.failures[code, default: 0] += 1
                    shared.slowestFailure = max(shared.slowestFailure, elapsed)
                }
                if error.code == .deadlineExceeded { clients[target] = nil }  // a fresh connection next time
            }
            state.withLock { $0.attempts.append(.init(client: client, index: index, title: title, acked: acked)) }
            index += 1
            if number > 0, number % max(1, options.writes / 10) == 0 { progress("\(number) writes attempted") }
        }
    }

    // MARK: Faults

    private func injectFaults() async throws {
        for fault in faults {
            while state.withLock({ $0.nextWrite }) < fault.at {
                try await Task.sleep(for: .milliseconds(5))
            }
            progress("fault \(fault)")
            let names = fault.node.split(separator: ",").map(String.init)
            switch fault.action {
            case .kill: try cluster.signal(names, SIGKILL)
            case .stop: try cluster.signal(names, SIGSTOP)
            case .cont: try cluster.signal(names, SIGCONT)
            case .restart: for name in names { try cluster.start(name) }
            case .promote: try await promote(fault.node)
            }
        }
    }

    private func promote(_ node: String) async throws {
        var name = node
        if node == "best" {
            // The furthest ahead: by the last event's epoch, then by length.
            var best: (name: String, position: (UInt64, UInt64))?
            for candidate in cluster.names {
                guard let status = await status(of: candidate), status.role == "follower" else { continue }
                let position = (status.lastEpoch, status.lastSequence)
                if let current = best, current.position >= position { continue }
                best = (candidate, position)
            }
            guard let best else { throw CheckFailure("no live follower to promote") }
            name = best.name
        }
        guard let address = cluster.address(name), let client = Client(address: address) else { throw CheckFailure("no node \(name)") }
        defer { Task { await client.close() } }
        let status = try await client.call(.promote, Chordstore_V1_PromoteRequest(), timeout: .seconds(30), as: Chordstore_V1_NodeStatus.self)
        progress("promoted \(name) (epoch \(status.epoch), \(status.lastSequence) events)")
        state.withLock { $0.target = address }
    }

    // MARK: Healing and reading back

    private func status(of name: String) async -> Chordstore_V1_NodeStatus? {
        guard let address = cluster.address(name), let client = Client(address: address, retry: .once) else { return nil }
        defer { Task { await client.close() } }
        return try? await client.call(.getNodeStatus, Chordstore_V1_NodeStatusRequest(), timeout: .seconds(2), as: Chordstore_V1_NodeStatus.self)
    }

    private func waitForLeader() async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            var up = 0
            for name in cluster.names where await status(of: name) != nil { up += 1 }
            if up == options.nodes, await status(of: "n1")?.role == "leader" { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw CheckFailure("the cluster did not come up within 60 s (see the logs in \(options.dir))")
    }

    /// Waits until every node answers with the same last event and checksum.
    private func converge() async throws -> [String: Chordstore_V1_NodeStatus] {
        let deadline = ContinuousClock.now + .seconds(options.healTimeout)
        var statuses: [String: Chordstore_V1_NodeStatus] = [:]
        while ContinuousClock.now < deadline {
            statuses = [:]
            for name in cluster.names { statuses[name] = await status(of: name) }
            let heads = Set(statuses.values.map { "\($0.lastSequence)/\($0.lastChecksum)" })
            if statuses.count == options.nodes, heads.count == 1, statuses.values.filter({ $0.role == "leader" }).count == 1 {
                return statuses
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        progress("the logs did not agree within \(options.healTimeout) s")
        return statuses
    }

    private func report(_ statuses: [String: Chordstore_V1_NodeStatus]) async throws -> CheckReport {
        var report = CheckReport()
        let shared = state.withLock { $0 }
        report.attempted = shared.attempts.count
        report.acknowledged = shared.attempts.count { $0.acked != nil }
        report.failed = report.attempted - report.acknowledged
        report.failures = shared.failures
        report.slowestFailureMillis = Int(shared.slowestFailure / .milliseconds(1))
        report.faults = faults.map(\.description)
        report.nodes = cluster.names.compactMap { name in
            statuses[name].map {
                .init(name: name, role: $0.role, epoch: $0.epoch, lastSequence: $0.lastSequence,
                      lastChecksum: String($0.lastChecksum, radix: 16), parkedEvents: $0.parkedEvents)
            }
        }
        let heads = Set(statuses.values.map { "\($0.lastSequence)/\($0.lastChecksum)" })
        report.logsIdentical = statuses.count == options.nodes && heads.count == 1
        // Read the log back from the leader (or, if none leads, from n1).
        let source = statuses.first { $0.value.role == "leader" }?.key ?? "n1"
        let log = try await readTitles(from: source)
        report.logEvents = Int(statuses[source]?.lastSequence ?? 0)
        let analysis = CheckAnalysis.analyze(attempts: shared.attempts, log: log)
        report.lost = analysis.lost.count
        report.duplicated = analysis.duplicated.count
        report.unexpected = analysis.unexpected.count
        report.outOfOrder = analysis.outOfOrder.count
        report.misplaced = analysis.misplaced.count
        report.examples = analysis.examples(10)
        report.seconds = Double((ContinuousClock.now - started) / .milliseconds(1)) / 1_000
        return report
    }

    /// The titles of this run's added chordsets, with their sequence numbers, in log order.
    private func readTitles(from name: String) async throws -> [(sequence: UInt64, title: String)] {
        guard let address = cluster.address(name), let client = Client(address: address) else { throw CheckFailure("no node \(name)") }
        defer { Task { await client.close() } }
        var titles: [(sequence: UInt64, title: String)] = []
        let prefix = "check-\(runID)-"
        for try await envelope in try await client.stream(.readLog, Chordstore_V1_ReadLogRequest(), as: Chordstore_V1_EventEnvelope.self) {
            if case .chordsetAdded(let added)? = envelope.event, added.chordset.title.hasPrefix(prefix) {
                titles.append((envelope.sequence, added.chordset.title))
            }
        }
        return titles
    }

    private func progress(_ line: String) {
        let seconds = Double((ContinuousClock.now - started) / .milliseconds(1)) / 1_000
        FileHandle.standardError.write(Data(String(format: "[%7.2f s] %@\n", seconds, line).utf8))
    }
}
