import ArgumentParser
import ChordStoreDomain
import ChordStoreEngine
import Foundation

/// `chordstore bench undo`: undo, redo and time-travel latency at the end of a long log.
struct BenchUndoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "undo",
        abstract: "Undo and redo latency next to a plain write at the end of a long log, and as-of read latency.",
        discussion: prose("""
            Loads a log of N events (as 'bench rebuild' does, without fsync), reopens the
            store durably, then repeats: rename (a plain write), undo, redo, undo, each timed
            from call to durable commit, one caller. Then reads the state as of random
            points of the log (list of 50 by creation date), each from the newest snapshot
            before the point plus a replay of the events after it.
            """))

    @OptionGroup var directory: BenchDirectory
    @Option(help: "Events in the log (at most 10,000,000).") var events = 1_000_000
    @Option(help: "Rounds of rename, undo, redo, undo.") var rounds = 300
    @Option(help: "Reads of the past at random points.") var reads = 50
    @Option(help: "Seed of the generated commands and points.") var seed: UInt64 = 42

    func validate() throws {
        guard (1...10_000_000).contains(events) else { throw ValidationError("--events must be 1...10000000") }
        guard (1...100_000).contains(rounds) else { throw ValidationError("--rounds must be 1...100000") }
        guard (1...10_000).contains(reads) else { throw ValidationError("--reads must be 1...10000") }
    }

    func run() async throws {
        try await directory.withDirectory { url in
            do {
                try await BenchLog.load(url, events: events, seed: seed)
                let store = try ChordStore.open(at: url)
                defer { store.close() }
                let head = try store.profile().lastSequence
                guard let target = try store.chordsets(order: .creationDate, limit: 1).first else {
                    throw ChordStoreError(.failedPrecondition, "the loaded log has no chordset")
                }
                let context = CommandContext(session: "bench-undo")
                var write = Latencies(), undo = Latencies(), redo = Latencies()
                let progress = ProgressReporter(label: "undo rounds")
                for round in 0..<(rounds + 10) {
                    let measured = round >= 10  // the first rounds warm up
                    var start = ContinuousClock.now
                    try await store.execute(.renameChordset(id: target.id, title: "round \(round)"), context: context)
                    if measured { write.append(ContinuousClock.now - start) }
                    start = ContinuousClock.now
                    try await store.execute(.undo, context: context)
                    if measured { undo.append(ContinuousClock.now - start) }
                    start = ContinuousClock.now
                    try await store.execute(.redo, context: context)
                    if measured { redo.append(ContinuousClock.now - start) }
                    start = ContinuousClock.now
                    try await store.execute(.undo, context: context)
                    if measured { undo.append(ContinuousClock.now - start) }
                    progress.report(UInt64(round + 1), UInt64(rounds + 10))
                }
                progress.finish()

                var generator = SplitMix64(seed: seed)
                var past = Latencies()
                let readProgress = ProgressReporter(label: "reads of the past")
                for read in 0..<reads {
                    let point = 1 + generator.next() % head
                    let start = ContinuousClock.now
                    _ = try store.state(asOf: .sequence(point)).chordsets(order: .creationDate, limit: 50)
                    past.append(ContinuousClock.now - start)
                    readProgress.report(UInt64(read + 1), UInt64(reads))
                }
                readProgress.finish()
                guard try store.verify().isSound else { throw ChordStoreError(.dataLoss, "verify failed after the benchmark") }

                let chordsets = try store.profile().chordsets
                Output.print("undo: at the end of a \(head)-event log (\(chordsets) chordsets), durable, 1 caller, \(rounds) rounds")
                for (name, latencies) in [("write (rename)", write), ("undo", undo), ("redo", redo)] {
                    Output.print("  " + Output.pad(name, 15) + String(format: " p50 %.3f ms  p99 %.3f ms", latencies.percentile(50), latencies.percentile(99)))
                }
                Output.print(String(format: "  undo / write p50 ratio %.2f", undo.percentile(50) / max(write.percentile(50), 0.000_001)))
                Output.print(String(
                    format: "as-of reads: %d random points, list of 50: p50 %.1f ms  p99 %.1f ms",
                    reads, past.percentile(50), past.percentile(99)))
            } catch let error as ChordStoreError { throw Failure(error) }
        }
    }
}
