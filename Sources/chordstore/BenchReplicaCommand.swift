import ArgumentParser
import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplica
import Foundation
import SwiftProtobuf

/// `chordstore bench replica`: a device replica's local reads and writes, and its first
/// sync of a large store.
struct BenchReplicaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replica",
        abstract: "Device replica: local list and write latency, and the first sync of a store of --events events.",
        discussion: prose("""
            Local: on a fresh replica (no server involved), --writes adds and as many
            renames, each timed until it returns (applied to the view and queued on disk,
            not flushed); then lists of --chordsets chordsets in creation order, timed with
            the order's index built (repeated reads) and right after a write (the index
            sorted again). Sync: starts 'chordstore serve' on a temporary directory, fills a
            store with --events events (one add in 20, the rest renames and tempo changes,
            from 16 connections), then times a new replica's first sync of it, and the
            reads (a page of 50, every millisecond, on another thread) made during it.
            """))

    @Option(help: "Events in the store the first sync copies.") var events = 100_000
    @Option(help: "Chordsets in the listed replica.") var chordsets = 1_000
    @Option(help: "Local writes to time (adds, then as many renames).") var writes = 1_000

    func validate() throws {
        guard (20...2_000_000).contains(events) else { throw ValidationError("--events must be 20...2000000") }
        guard (1...5_000).contains(chordsets) else { throw ValidationError("--chordsets must be 1...5000") }
        guard (1...100_000).contains(writes) else { throw ValidationError("--writes must be 1...100000") }
    }

    func run() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("chordstore-bench-replica-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        try local(root.appendingPathComponent("local"))
        try await firstSync(root.appendingPathComponent("synced"))
    }

    private func local(_ directory: URL) throws {
        let replica = try Replica.open(at: directory, store: "default")
        defer { replica.close() }
        var adds = Latencies()
        var ids: [UUID] = []
        for index in 0..<max(writes, chordsets) {
            let start = ContinuousClock.now
            let chordset = try replica.addChordset(AddChordset(title: "chordset \(index)"))
            if index < writes { adds.append(ContinuousClock.now - start) }
            ids.append(chordset.id)
        }
        var renames = Latencies()
        for index in 0..<writes {
            let start = ContinuousClock.now
            try replica.renameChordset(ids[index % ids.count], to: "renamed \(index)")
            renames.append(ContinuousClock.now - start)
        }
        Output.print("local writes (\(writes) each, queued on the device; \(replica.pendingWrites.count) pending at the end):")
        Output.print(String(format: "  add     p50 %.3f ms  p99 %.3f ms", adds.percentile(50), adds.percentile(99)))
        Output.print(String(format: "  rename  p50 %.3f ms  p99 %.3f ms", renames.percentile(50), renames.percentile(99)))

        let query = ChordsetQuery(order: .creationDate, limit: chordsets)
        let listed = try replica.chordsets(query).chordsets.count
        var cached = Latencies()
        for _ in 0..<200 {
            let start = ContinuousClock.now
            _ = try replica.chordsets(query)
            cached.append(ContinuousClock.now - start)
        }
        var afterWrite = Latencies()
        for index in 0..<200 {
            try replica.renameChordset(ids[index % ids.count], to: "again \(index)")
            let start = ContinuousClock.now
            _ = try replica.chordsets(query)
            afterWrite.append(ContinuousClock.now - start)
        }
        Output.print("local list of \(listed) chordsets (creation order, 200 runs each):")
        Output.print(String(format: "  index built      p50 %.3f ms  p99 %.3f ms", cached.percentile(50), cached.percentile(99)))
        Output.print(String(format: "  after a write    p50 %.3f ms  p99 %.3f ms", afterWrite.percentile(50), afterWrite.percentile(99)))
    }

    private func firstSync(_ directory: URL) async throws {
        let child = try await ChildServer.start()
        defer { child.stop() }
        let admin = Client(host: "127.0.0.1", port: child.port, credentials: child.credentials)
        defer { Task { await admin.close() } }
        _ = try await admin.createStore("bench")
        let fillStart = ContinuousClock.now
        let adds = max(1, events / 20)
        let ids = try await withThrowingTaskGroup(of: [UUID].self) { group in
            for lane in 0..<16 {
                group.addTask {
                    let client = Client(host: "127.0.0.1", port: child.port, store: "bench", credentials: child.credentials)
                    defer { Task { await client.close() } }
                    var made: [UUID] = []
                    for index in stride(from: lane, to: adds, by: 16) {
                        made.append(try await client.addChordset(title: "chordset \(index)").id)
                    }
                    return made
                }
            }
            return try await group.reduce(into: []) { $0.append(contentsOf: $1) }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<16 {
                group.addTask {
                    let client = Client(host: "127.0.0.1", port: child.port, store: "bench", credentials: child.credentials)
                    defer { Task { await client.close() } }
                    for index in stride(from: lane, to: events - adds, by: 16) {
                        try await client.renameChordset(ids[index % ids.count], to: "edit \(index)")
                    }
                }
            }
            try await group.waitForAll()
        }
        Output.print(String(format: "filled store bench with %d events in %.1f s", events, (ContinuousClock.now - fillStart).seconds))
        let replica = try await Replica.open(at: directory, store: "bench")
        defer { replica.close() }
        let client = Client(host: "127.0.0.1", port: child.port, store: "bench", credentials: child.credentials)
        defer { Task { await client.close() } }
        // Reads while the sync copies, as an app's main thread makes them: a page of 50
        // chordsets every millisecond, timed, on a thread of its own.
        let reads = ReadsDuringSync(replica)
        let start = ContinuousClock.now
        let report = try await replica.sync(with: client, timeout: .seconds(300))
        let seconds = (ContinuousClock.now - start).seconds
        let during = reads.stop()
        Output.print(String(
            format: "first sync: %d events (%d chordsets) in %.3f s, %.0f events/s", report.pulled,
            try replica.count(), seconds, Double(report.pulled) / seconds))
        Output.print(String(
            format: "  reads during it (a page of 50, every 1 ms; %d reads): p50 %.3f ms  p99 %.3f ms  max %.3f ms",
            during.samples.count, during.percentile(50), during.percentile(99), during.percentile(100)))
        let closeStart = ContinuousClock.now
        replica.close()
        Output.print(String(format: "close (saves the view): %.3f s", (ContinuousClock.now - closeStart).seconds))
        var opens: [Double] = []
        for _ in 0..<3 {
            let reopenStart = ContinuousClock.now
            let reopened = try await Replica.open(at: directory)
            opens.append((ContinuousClock.now - reopenStart).seconds)
            reopened.close()
        }
        Output.print(String(format: "reopen (reads the saved view): median of 3 %.3f s", opens.sorted()[1]))
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("view.checkpoint"))
        let foldStart = ContinuousClock.now
        let folded = try await Replica.open(at: directory)
        Output.print(String(format: "reopen without the saved view (folds every copied event): %.3f s", (ContinuousClock.now - foldStart).seconds))
        folded.close()
    }
}


/// Reads a replica's first page (50 chordsets, creation order) every millisecond on a
/// thread of its own, timing each, until stopped.
final class ReadsDuringSync: @unchecked Sendable {
    private let lock = NSLock()
    private var latencies = Latencies()
    private var stopping = false
    private let done = DispatchSemaphore(value: 0)

    init(_ replica: Replica) {
        Thread { [self] in
            let query = ChordsetQuery(limit: 50)
            while !lock.withLock({ stopping }) {
                let start = ContinuousClock.now
                _ = try? replica.chordsets(query)
                let took = ContinuousClock.now - start
                lock.withLock { latencies.append(took) }
                Thread.sleep(forTimeInterval: 0.001)
            }
            done.signal()
        }.start()
    }

    /// Stops the reads and returns their latencies.
    func stop() -> Latencies {
        lock.withLock { stopping = true }
        done.wait()
        return lock.withLock { latencies }
    }
}
