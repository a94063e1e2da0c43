import ArgumentParser
import ChordStoreDomain
import ChordStoreEngine
import Foundation

/// `chordstore bench ...`: measurements of this machine's storage path.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure durable appends, rebuild speed and the protocol on this machine.",
        subcommands: [BenchAppendCommand.self, BenchRebuildCommand.self, BenchUndoCommand.self, BenchWireCommand.self, BenchGRPCCommand.self, BenchFeedCommand.self, BenchQueryCommand.self, BenchReplicationCommand.self, BenchReplicaCommand.self, BenchCoreDataImportCommand.self])
}

/// Where a benchmark keeps its store: `--data DIR`, or a fresh temporary directory that is
/// removed afterwards.
struct BenchDirectory: ParsableArguments {
    @Option(help: ArgumentHelp("Use (and keep) this data directory instead of a fresh temporary one.", valueName: "DIR"))
    var data: String?

    func withDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
        if let data { return try await body(URL(fileURLWithPath: data)) }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("chordstore-bench-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(at: directory) }
        return try await body(directory)
    }
}

/// Latency samples and their percentiles.
struct Latencies {
    private(set) var samples: [Duration] = []

    mutating func append(_ sample: Duration) { samples.append(sample) }
    mutating func append(contentsOf other: Latencies) { samples.append(contentsOf: other.samples) }

    /// The `p`-th percentile (0...100) in milliseconds.
    func percentile(_ p: Double) -> Double {
        guard !samples.isEmpty else { return 0 }
        let sorted = samples.sorted()
        let rank = min(sorted.count - 1, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1)
        return sorted[max(0, rank)].seconds * 1_000
    }

    /// Calls `call` with 0, 1, 2, … until `deadline`, timing each.
    static func timing(until deadline: ContinuousClock.Instant, _ call: (Int) async throws -> Void) async throws -> Latencies {
        var latencies = Latencies()
        var i = 0
        while ContinuousClock.now < deadline {
            let start = ContinuousClock.now
            try await call(i)
            latencies.append(ContinuousClock.now - start)
            i += 1
        }
        return latencies
    }

    /// The latencies of `workers` concurrent tasks, each running `work` with its number.
    static func gathering(workers: Int, _ work: @escaping @Sendable (Int) async throws -> Latencies) async throws -> Latencies {
        try await withThrowingTaskGroup(of: Latencies.self) { group in
            for worker in 0..<workers { group.addTask { try await work(worker) } }
            var all = Latencies()
            for try await part in group { all.append(contentsOf: part) }
            return all
        }
    }

    /// The line `bench wire` and `bench grpc` print (tools/bench/compare reads it): calls
    /// per second over `elapsed` seconds, and the p50, p99 and p999 latency.
    func callsLine(elapsed: Double) -> String {
        String(
            format: "  %.0f calls/s; latency p50 %.3f ms, p99 %.3f ms, p999 %.3f ms",
            Double(samples.count) / elapsed, percentile(50), percentile(99), percentile(99.9))
    }
}

/// `chordstore bench append`: durable adds from concurrent callers through group commit.
struct BenchAppendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "append",
        abstract: "Durable appends (one add-chordset event each) from N concurrent callers.",
        discussion: prose("""
            Prints events/s and the p50/p99 latency of a call from submission to its durable
            commit. With --print-acks, prints 'ack SEQUENCE CHORDSET_ID' after each
            acknowledged command (used by the crash-safety test). With --readers N, N
            threads read one chordset in a loop meanwhile (what commits cost while reads
            go on), and the reads per second are printed too.
            """))

    @OptionGroup var directory: BenchDirectory
    @Option(help: "Concurrent callers.") var callers = 64
    @Option(help: "Events to append in all (bounded; at most 10,000,000).") var count = 20_000
    @Option(help: "Stop after this many seconds even if --count is not reached.") var seconds: Double = 120
    @Flag(help: "Use the in-memory engine (no disk).") var inMemory = false
    @Flag(help: "Print an 'ack' line per acknowledged command.") var printAcks = false
    @Flag(help: "Skip fsync at commit (shows the CPU ceiling; acknowledged writes are not durable).") var noSync = false
    @Option(help: "Threads reading one chordset in a loop while the appends run (0...64).") var readers = 0
    @Flag(help: "Keep the state in memory, saved in the background, the views taking no commit (as serve --live-state).") var liveState = false

    func validate() throws {
        guard (1...4_096).contains(callers) else { throw ValidationError("--callers must be 1...4096") }
        guard (0...64).contains(readers) else { throw ValidationError("--readers must be 0...64") }
        guard !(inMemory && liveState) else { throw ValidationError("--live-state is the LMDB engine's; --in-memory keeps everything in memory already") }
        guard (1...10_000_000).contains(count) else { throw ValidationError("--count must be 1...10000000") }
        guard seconds > 0 else { throw ValidationError("--seconds must be positive") }
    }

    func run() async throws {
        try await directory.withDirectory { url in
            let store: ChordStore
            do {
                var options = ChordStore.Options()
                options.unsafeNoSync = noSync
                options.liveState = liveState
                store = inMemory ? ChordStore.inMemory(options: options) : try ChordStore.open(at: url, options: options)
            } catch let error as ChordStoreError { throw Failure(error) }
            defer { store.close() }
            let reading = try await ReadLoad(store: store, threads: readers)
            defer { _ = reading.stop() }
            let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
            let perCaller = (count + callers - 1) / callers
            let started = ContinuousClock.now
            let readsBefore = reading.count
            let latencies = try await withThrowingTaskGroup(of: Latencies.self) { group in
                for caller in 0..<callers {
                    let quota = min(perCaller, max(0, count - caller * perCaller))
                    group.addTask {
                        var latencies = Latencies()
                        for i in 0..<quota where ContinuousClock.now < deadline {
                            let start = ContinuousClock.now
                            let recorded = try await store.execute(
                                .addChordset(AddChordset(title: "bench \(caller)-\(i)")),
                                context: CommandContext(session: "bench-\(caller)"))
                            latencies.append(ContinuousClock.now - start)
                            if printAcks, case .chordsetAdded(let chordset) = recorded.event {
                                FileHandle.standardOutput.write(Data("ack \(recorded.sequence) \(chordset.id.uuidString)\n".utf8))
                            }
                        }
                        return latencies
                    }
                }
                var all = Latencies()
                for try await latencies in group { all.append(contentsOf: latencies) }
                return all
            }
            let elapsed = (ContinuousClock.now - started).seconds
            let reads = reading.stop() - readsBefore
            let done = latencies.samples.count
            let statistics = store.statistics
            let kind = inMemory ? "in-memory" : noSync ? "LMDB without fsync (not durable)" : "durable (fsync per commit)"
            Output.print("append: \(done) events, \(callers) callers, \(kind)")
            Output.print(String(
                format: "  %.0f events/s; commit latency p50 %.3f ms, p99 %.3f ms; %.2f s; %.1f events per transaction",
                Double(done) / elapsed, latencies.percentile(50), latencies.percentile(99), elapsed,
                Double(statistics.events) / Double(max(1, statistics.commits))))
            if readers > 0 {
                Output.print(String(
                    format: "  %.0f reads/s from %d reader %@ meanwhile", Double(reads) / elapsed, readers, readers == 1 ? "thread" : "threads"))
            }
        }
    }
}

/// `chordstore bench rebuild`: how fast the views are rebuilt from a long log.
struct BenchRebuildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rebuild",
        abstract: "Load a log of N events, then time open, rebuild and verify.",
        discussion: prose("""
            The log is 10% add-chordset events and 90% edits of existing chordsets
            (colour, bpm, rename in equal parts), loaded without fsync to save time
            (the measurement is of the replay, not of the load).
            """))

    @OptionGroup var directory: BenchDirectory
    @Option(help: "Events in the log (at most 10,000,000).") var events = 1_000_000
    @Option(help: "Seed of the generated commands.") var seed: UInt64 = 42

    func validate() throws {
        guard (1...10_000_000).contains(events) else { throw ValidationError("--events must be 1...10000000") }
    }

    func run() async throws {
        try await directory.withDirectory { url in
            do {
                try await BenchLog.load(url, events: events, seed: seed)
                var clock = ContinuousClock.now
                let store = try ChordStore.open(at: url)
                defer { store.close() }
                let open = (ContinuousClock.now - clock).seconds
                let total = try store.profile().lastSequence
                let rebuildProgress = ProgressReporter(label: "rebuilding")
                clock = ContinuousClock.now
                try await store.rebuild(progress: rebuildProgress.report)
                rebuildProgress.finish()
                let rebuild = (ContinuousClock.now - clock).seconds
                let verifyProgress = ProgressReporter(label: "verifying")
                clock = ContinuousClock.now
                let report = try store.verify(progress: verifyProgress.report)
                verifyProgress.finish()
                let verify = (ContinuousClock.now - clock).seconds
                guard report.isSound else { throw Failure(report.problem!) }
                Output.print("rebuild: \(total) events (\(try store.profile().chordsets) chordsets)")
                Output.print(String(format: "  open %.3f s", open))
                Output.print(String(format: "  rebuild %.2f s = %.0f events/s", rebuild, Double(total) / rebuild))
                Output.print(String(format: "  verify %.2f s = %.0f events/s", verify, Double(total) / verify))
            } catch let error as ChordStoreError { throw Failure(error) }
        }
    }

}

/// The log the rebuild and undo benchmarks load: 10% adds, 90% edits of existing
/// chordsets, written without fsync from concurrent callers.
enum BenchLog {
    static func load(_ url: URL, events: Int, seed: UInt64) async throws {
        var options = ChordStore.Options()
        options.unsafeNoSync = true
        options.seed = seed
        let store = try ChordStore.open(at: url, options: options)
        defer { store.close() }
        let progress = ProgressReporter(label: "loading")
        defer { progress.finish() }
        var generator = SplitMix64(seed: seed)
        var chordIDs: [UUID] = []
        var chordsetIDs: [UUID] = []
        var done = 0
        while done < events {
            let batch = min(4_096, events - done)
            var commands: [Command] = []
            for _ in 0..<batch {
                let roll = chordsetIDs.isEmpty ? 0 : Int(generator.next() % 10)
                switch roll {
                case 0:
                    commands.append(.addChordset(AddChordset(title: "chordset \(done + commands.count)")))
                case 1...3:
                    let chord = chordIDs[Int(generator.next() % UInt64(chordIDs.count))]
                    commands.append(.setChordColor(chordID: chord, color: .random(using: &generator)))
                case 4...6:
                    let chord = chordIDs[Int(generator.next() % UInt64(chordIDs.count))]
                    commands.append(.setChordBPM(chordID: chord, bpm: Double(60 + generator.next() % 120)))
                default:
                    let id = chordsetIDs[Int(generator.next() % UInt64(chordsetIDs.count))]
                    commands.append(.renameChordset(id: id, title: "renamed \(generator.next() % 1_000)"))
                }
            }
            let added = try await withThrowingTaskGroup(of: Chordset?.self) { group in
                for command in commands {
                    group.addTask {
                        let recorded = try await store.execute(command, context: CommandContext(session: "bench"))
                        if case .chordsetAdded(let chordset) = recorded.event { return chordset }
                        return nil
                    }
                }
                return try await group.reduce(into: [Chordset]()) { if let chordset = $1 { $0.append(chordset) } }
            }
            for chordset in added {
                chordsetIDs.append(chordset.id)
                chordIDs.append(contentsOf: chordset.chords.map(\.id))
            }
            done += batch
            progress.report(UInt64(done), UInt64(events))
        }
        try store.verify().problem.map { throw $0 }
    }
}
