import ChordStoreAPI
import ArgumentParser
@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplication
import ChordStoreServer
import ChordStoreWire
import Foundation
import Logging
import Synchronization
import SwiftProtobuf

/// `chordstore bench replication`: replication lag, quorum against local write latency,
/// and how long a new follower takes to copy a log.
struct BenchReplicationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replication",
        abstract: "Replication lag at steady rates, quorum vs local write latency, and a new follower's copy time.",
        discussion: prose("""
            Runs a leader and a follower in this process (two servers on 127.0.0.1, each
            with its own LMDB directory under the system's temporary directory, fsync on).
              lag      for each --rates R: --seconds of adds at a steady R events/s from 64
                       in-process callers on the leader; lag is the time from an event's
                       commit on the leader to its commit on the follower (p50/p99).
              latency  --latency-writes sequential adds over the wire from one client,
                       alternating local and quorum rounds (p50/p99 of each).
              copy     fills a fresh leader with --copy-events events (fsync off for the
                       fill, then sync(2), as a leader that synced each commit has its
                       pages on the disk), then times a new follower started on an empty
                       directory until it serves a read of them all: bootstrapped from a
                       copy of the leader's files (serve's default), first from the
                       copy's views while the log still arrives, then from the whole
                       copy (the copy and the start are shown apart, with the CPU this
                       process used meanwhile,
                       leader and follower together; --bootstrap-runs new followers in
                       turn, each on an empty directory, and their median), then
                       replaying the log event by event (--bootstrap replay;
                       --no-replay skips it).
            Leader and follower share this machine's cores.
            """))

    @Option(help: "Steady rates to measure lag at, events/s, comma-separated.") var rates = "5000,20000"
    @Option(help: "Seconds per lag measurement.") var seconds = 5
    @Option(help: "Sequential writes per latency round (two rounds each of local and quorum).") var latencyWrites = 300
    @Option(help: "Events a new follower copies (0: skip).") var copyEvents = 1_000_000
    @Option(help: "New followers bootstrapped from a copy, one after another (the median is shown: of an even count, the lower middle run).") var bootstrapRuns = 1
    @Flag(inversion: .prefixedNo, help: "Also time a new follower that replays the log event by event.") var replay = true

    func validate() throws {
        guard !rateList.isEmpty, rateList.allSatisfy({ (1...1_000_000).contains($0) }) else { throw ValidationError("--rates takes 1...1000000, e.g. 5000,20000") }
        guard (1...600).contains(seconds), (1...100_000).contains(latencyWrites), (0...10_000_000).contains(copyEvents),
              (1...20).contains(bootstrapRuns) else {
            throw ValidationError("--seconds 1...600, --latency-writes 1...100000, --copy-events 0...10000000, --bootstrap-runs 1...20")
        }
    }

    var rateList: [Int] { rates.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }

    func run() async throws {
        let pair = try await Pair.start(fill: 0)
        Output.print("lag: commit on the leader to commit on the follower")
        Output.print("target ev/s  achieved ev/s  lag p50 ms  p99 ms")
        for rate in rateList {
            let (achieved, lag) = try await pair.lag(rate: rate, seconds: seconds)
            Output.print(String(format: "%11d  %13.0f  %10.2f  %6.2f", rate, achieved, lag.percentile(50), lag.percentile(99)))
        }
        Output.print("write latency over the wire, one client (alternated rounds)")
        var local = Latencies(), quorum = Latencies()
        for round in 0..<4 {
            let durability: Durability = round % 2 == 0 ? .local : .quorum
            let samples = try await pair.writeLatencies(latencyWrites, durability)
            if durability == .local { local.append(contentsOf: samples) } else { quorum.append(contentsOf: samples) }
        }
        Output.print(String(format: "local   p50 %.3f ms  p99 %.3f ms", local.percentile(50), local.percentile(99)))
        Output.print(String(format: "quorum  p50 %.3f ms  p99 %.3f ms  (ratio of p50s %.2f)",
                            quorum.percentile(50), quorum.percentile(99), quorum.percentile(50) / max(local.percentile(50), 0.001)))
        await pair.stop()
        if copyEvents > 0 {
            let progress = ProgressReporter(label: "filling the leader")
            let source = try await Pair.start(fill: copyEvents, progress: progress.report)
            progress.finish()
            var fromViews = Latencies(), whole = Latencies()
            for _ in 0..<bootstrapRuns {
                let cpuBefore = Self.processCPUSeconds()
                let run = try await source.bootstrapNewFollower()
                let cpu = Self.processCPUSeconds() - cpuBefore
                fromViews.append(run.servedFromViews)
                whole.append(run.servedWhole)
                let mib = Double(run.bytes) / 1_048_576
                Output.print(String(format: "bootstrap: a new follower served a read of all %d events from the copy's views %.2f s after it started, and from its whole copy (%.0f MiB) after %.2f s (the copy %.2f s, %.0f MiB/s; %.2f s of CPU, leader and follower together)",
                                    copyEvents, run.servedFromViews.seconds, mib, run.servedWhole.seconds, run.copy.seconds, mib / run.copy.seconds, cpu))
            }
            if bootstrapRuns > 1 {
                // The nearest-rank median: the lower middle run of an even count.
                for (what, times) in [("from the views", fromViews), ("from the whole copy", whole)] {
                    Output.print(String(format: "bootstrap: reads %@, median %.2f s of %d runs (%@)", what, times.percentile(50) / 1_000, bootstrapRuns,
                                        times.samples.map { String(format: "%.2f", $0.seconds) }.joined(separator: ", ")))
                }
            }
            if replay {
                let elapsed = try await source.copyToNewFollower()
                Output.print(String(format: "replay: a new follower copied %d events one by one in %.1f s (%.0f events/s)",
                                    copyEvents, elapsed.seconds, Double(copyEvents) / elapsed.seconds))
            }
            await source.stop()
        }
    }
}

extension BenchReplicationCommand {
    /// The CPU time (user and system) this process has used, in seconds.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        guard getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage) == 0 else { return 0 }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}

/// A leader and (after ``start(fill:progress:)``) a follower, in this process.
private final class Pair: Sendable {
    struct Member {
        let store: ChordStore
        let node: ReplicationNode
        let server: Server
        let address: String
        let directory: URL

        static func start(name: String, port: Int, peer: Int, follow: Int?, directory: URL) async throws -> Member {
            let store = try ChordStore.open(at: directory)
            var logger = Logger(label: name)
            logger.logLevel = .error
            let config = ReplicationConfig(
                node: name, address: "127.0.0.1:\(port)", peers: ["127.0.0.1:\(peer)"], follow: follow.map { "127.0.0.1:\($0)" },
                parkDirectory: directory.appendingPathComponent("parked"))
            let node = ReplicationNode(config: config, store: store, logger: logger)
            let server = Server(store: store, node: name, replication: node, security: .loopbackOnly, logger: logger)
            _ = try await server.start(host: "127.0.0.1", port: port)
            await node.start()
            return Member(store: store, node: node, server: server, address: "127.0.0.1:\(port)", directory: directory)
        }

        func stop() async {
            await node.stop()
            await server.shutdown(grace: .seconds(2))
            store.close()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    let leader: Member
    let follower: Mutex<Member?>
    let ports: [Int]

    private init(leader: Member, follower: Member?, ports: [Int]) {
        self.leader = leader
        self.follower = Mutex(follower)
        self.ports = ports
    }

    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("chordstore-bench-replication-\(UUID().uuidString)")
    }

    /// A leader (filled with `fill` events first, fsync off for the fill, then the
    /// filesystems synced) and, if
    /// `fill` is 0, a follower already following it.
    static func start(fill: Int, progress: @escaping @Sendable (UInt64, UInt64) -> Void = { _, _ in }) async throws -> Pair {
        let ports = try LoopbackPorts.free(2)
        let leaderDirectory = directory()
        if fill > 0 {
            var options = ChordStore.Options()
            options.unsafeNoSync = true
            let store = try ChordStore.open(at: leaderDirectory, options: options)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for caller in 0..<64 {
                    group.addTask {
                        for index in stride(from: caller, to: fill, by: 64) {
                            try await store.execute(.addChordset(AddChordset(title: "copy \(index)")))
                            if caller == 0, index % 32_768 == 0 { progress(UInt64(index), UInt64(fill)) }
                        }
                    }
                }
                try await group.waitForAll()
            }
            store.close()
            // A leader that synced each commit has its pages on the disk; the fill's are
            // written now, so the disk is not still busy with them while a copy is timed.
            sync()
        }
        let leader = try await Member.start(name: "leader", port: ports[0], peer: ports[1], follow: nil, directory: leaderDirectory)
        let follower = fill > 0 ? nil : try await Member.start(name: "follower", port: ports[1], peer: ports[0], follow: ports[0], directory: directory())
        return Pair(leader: leader, follower: follower, ports: ports)
    }

    func stop() async {
        await follower.withLock { $0 }?.stop()
        await leader.stop()
    }

    /// When each sequence number committed on `store`, from `after` on, until `until`.
    private static func watchCommits(_ store: ChordStore, after: UInt64, until last: UInt64, deadline: ContinuousClock.Instant) async -> [UInt64: ContinuousClock.Instant] {
        var times: [UInt64: ContinuousClock.Instant] = [:]
        var seen = after
        while seen < last, ContinuousClock.now < deadline {
            await store.waitForCommit(after: seen, timeout: .milliseconds(100))
            let head = (try? store.lastLogSequence()) ?? seen
            let now = ContinuousClock.now
            if head > seen {
                for sequence in (seen + 1)...head { times[sequence] = now }
                seen = head
            }
        }
        return times
    }

    /// Adds at `rate` events/s for `seconds`; returns the rate reached and the lag.
    func lag(rate: Int, seconds: Int) async throws -> (Double, Latencies) {
        guard let follower = follower.withLock({ $0 }) else { return (0, Latencies()) }
        let start = try leader.store.lastLogSequence()
        let total = rate * seconds
        let last = start + UInt64(total)
        let deadline = ContinuousClock.now + .seconds(seconds * 3 + 30)
        let callers = 64
        async let leaderTimes = Self.watchCommits(leader.store, after: start, until: last, deadline: deadline)
        async let followerTimes = Self.watchCommits(follower.store, after: start, until: last, deadline: deadline)
        let began = ContinuousClock.now
        let store = leader.store
        try await withThrowingTaskGroup(of: Void.self) { group in
            for caller in 0..<callers {
                group.addTask {
                    let interval = Duration.seconds(Double(callers) / Double(rate))
                    var next = began + interval * (Double(caller) / Double(callers))
                    for _ in stride(from: caller, to: total, by: callers) {
                        if next > ContinuousClock.now { try await Task.sleep(until: next) }
                        next += interval
                        try await store.execute(.addChordset(AddChordset(title: "lag")))
                    }
                }
            }
            try await group.waitForAll()
        }
        let achieved = Double(total) / (ContinuousClock.now - began).seconds
        let (committed, applied) = await (leaderTimes, followerTimes)
        var lag = Latencies()
        for (sequence, at) in applied {
            if let commit = committed[sequence] { lag.append(max(.zero, at - commit)) }
        }
        return (achieved, lag)
    }

    /// `count` sequential adds over the wire with `durability`.
    func writeLatencies(_ count: Int, _ durability: Durability) async throws -> Latencies {
        let client = Client(host: "127.0.0.1", port: ports[0])
        defer { Task { await client.close() } }
        var latencies = Latencies()
        for index in 0..<count {
            let began = ContinuousClock.now
            _ = try await client.addChordset(title: "latency \(index)", options: WriteOptions(durability: durability, timeout: .seconds(10)))
            latencies.append(ContinuousClock.now - began)
        }
        return latencies
    }

    /// What one new follower's bootstrap took.
    struct Bootstrap {
        /// From its start to its first read of the leader's last event, served from the
        /// copy's views while the log still arrived.
        var servedFromViews: Duration
        /// From its start to that read served by the follower on its whole copy.
        var servedWhole: Duration
        /// The copy's part of `servedWhole`.
        var copy: Duration
        var bytes: UInt64
    }

    /// Bootstraps a follower on an empty directory from a copy of the leader's files (as
    /// `serve --follow` does, serving the copy's views while the log arrives), starts it,
    /// and times until it answers a read of the leader's last event, first from the
    /// views, then from the whole copy.
    func bootstrapNewFollower() async throws -> Bootstrap {
        let target = try leader.store.lastLogSequence()
        let port = try LoopbackPorts.free(1)[0]
        let directory = Self.directory()
        var logger = Logger(label: "bootstrap")
        logger.logLevel = .error
        let serve = Server.servingViews(host: "127.0.0.1", port: port) { [logger] views in
            Server(store: views, node: "bootstrapping", security: .loopbackOnly, logger: logger)
        }
        let servedFromViews = Mutex<Duration?>(nil)
        let began = ContinuousClock.now
        _ = try await FollowerBootstrap.run(
            leader: leader.address, into: directory, credentials: ClientCredentials(), logger: logger,
            serveViews: { views in
                let stop = try await serve(views)
                // Read here, while the download waits: the server is surely up, and a
                // read takes milliseconds of the copy's seconds.
                do {
                    try await Self.readLast(port: port, target: target)
                } catch {
                    await stop()
                    throw error
                }
                servedFromViews.withLock { $0 = $0 ?? ContinuousClock.now - began }
                return stop
            })
        let copy = ContinuousClock.now - began
        let member = try await Member.start(name: "bootstrapped", port: port, peer: ports[0], follow: ports[0], directory: directory)
        try await Self.readLast(port: port, target: target)
        let servedWhole = ContinuousClock.now - began
        let last = try member.store.lastLogSequence()
        let bytes = member.store.storageUsage.map { UInt64($0.logBytes + $0.viewsBytes) } ?? 0
        await member.stop()
        guard last >= target else { throw ChordStoreError(.dataLoss, "the bootstrapped follower holds \(last) events of \(target)") }
        // A failure to serve the views is logged below .error: say it here.
        guard let servedFromViews = servedFromViews.withLock({ $0 }) else {
            throw ChordStoreError(.internal, "the bootstrap served no reads from the copy's views")
        }
        return Bootstrap(servedFromViews: servedFromViews, servedWhole: servedWhole, copy: copy, bytes: bytes)
    }

    /// Reads the profile from the server on `port`; throws unless it holds `target` events.
    static func readLast(port: Int, target: UInt64) async throws {
        let client = Client(host: "127.0.0.1", port: port)
        let profile: Chordstore_V1_Profile
        do {
            profile = try await client.call(.getProfile, Chordstore_V1_GetProfileRequest(), timeout: .seconds(30))
        } catch {
            await client.close()
            throw error
        }
        await client.close()
        guard profile.lastSequence >= target else {
            throw ChordStoreError(.dataLoss, "the bootstrapping follower served \(profile.lastSequence) events of \(target)")
        }
    }

    /// Starts an empty follower and waits until it holds the leader's whole log.
    func copyToNewFollower() async throws -> Duration {
        let target = try leader.store.lastLogSequence()
        let began = ContinuousClock.now
        let member = try await Member.start(name: "follower", port: ports[1], peer: ports[0], follow: ports[0], directory: Self.directory())
        follower.withLock { $0 = member }
        let progress = ProgressReporter(label: "copying to the new follower")
        defer { progress.finish() }
        while try member.store.lastLogSequence() < target {
            await member.store.waitForCommit(after: try member.store.lastLogSequence(), timeout: .milliseconds(200))
            progress.report(try member.store.lastLogSequence(), target)
            guard ContinuousClock.now - began < .seconds(3_600) else { throw ChordStoreError(.unavailable, "the copy took over an hour") }
        }
        return ContinuousClock.now - began
    }
}
