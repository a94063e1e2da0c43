import ArgumentParser
import ChordStoreDomain
import ChordStoreEngine
import Foundation

/// `chordstore bench query`: filtered, sorted pages from a large store.
struct BenchQueryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Latency of filtered, sorted pages of 50 from a store of N chordsets.",
        discussion: prose("""
            Loads N chordsets (without fsync) titled from a word list, then times pages of
            50, in this process: a title prefix in title order (an index seek), a title
            that contains a string in creation order (a scan until 50 match), a creation
            window in descending creation order, and the next page after a cursor. Also
            times one count with a 'contains' filter (a full scan).
            """))

    @OptionGroup var directory: BenchDirectory
    @Option(help: "Chordsets to load (at most 10,000,000).") var chordsets = 1_000_000
    @Option(help: "Queries of each kind.") var runs = 200
    @Option(help: "Seed of the titles and queries.") var seed: UInt64 = 7

    static let words = ["amber", "ballad", "cadence", "delta", "echo", "fable", "groove", "harmony", "interlude", "jazz",
                        "kora", "lullaby", "motif", "nocturne", "octave", "prelude", "quartet", "rondo", "sonata", "tempo",
                        "unison", "verse", "waltz", "xylo", "yodel", "zither", "Élan", "Café", "Über", "Ñandú"]

    func validate() throws {
        guard (1...10_000_000).contains(chordsets) else { throw ValidationError("--chordsets must be 1...10000000") }
        guard (1...100_000).contains(runs) else { throw ValidationError("--runs must be 1...100000") }
    }

    func run() async throws {
        try await directory.withDirectory { url in
            do {
                var options = ChordStore.Options()
                options.unsafeNoSync = true
                options.snapshotInterval = nil
                let store = try ChordStore.open(at: url, options: options)
                defer { store.close() }
                try await load(store)
                let first = try store.chordsets(order: .creationDate, limit: 1).first?.creationDate ?? Instant(microsecondsSince1970: 0)
                let last = Instant.now
                var g = SplitMix64(seed: seed)
                func word() -> String { Self.words[Int(g.next() % UInt64(Self.words.count))] }
                var results: [(String, Latencies)] = []
                func time(_ name: String, _ make: () -> ChordsetQuery) throws {
                    var latencies = Latencies()
                    for _ in 0..<runs {
                        let query = make()
                        let start = ContinuousClock.now
                        let page = try store.query(query)
                        latencies.append(ContinuousClock.now - start)
                        if page.chordsets.isEmpty && query.cursor == nil { throw ChordStoreError(.internal, "\(name) found nothing") }
                    }
                    results.append((name, latencies))
                }
                try time("title prefix, by title") { ChordsetQuery(title: (.prefix, String(word().prefix(3))), order: .title, limit: 50) }
                try time("title contains, by creation") { ChordsetQuery(title: (.contains, String(word().dropFirst(1).prefix(3))), order: .creationDate, limit: 50) }
                let span = last.microsecondsSince1970 - first.microsecondsSince1970
                try time("creation window, newest first") {
                    let from = first.microsecondsSince1970 + Int64(g.next() % UInt64(max(1, span)))
                    return ChordsetQuery(
                        createdFrom: Instant(microsecondsSince1970: from),
                        createdBefore: Instant(microsecondsSince1970: from + max(1, span / 100)), order: .creationDate,
                        descending: true, limit: 50)
                }
                var cursorQuery = ChordsetQuery(title: (.prefix, "s"), order: .title, limit: 50)
                cursorQuery.cursor = try store.query(cursorQuery).nextCursor
                try time("next page after a cursor, by title") { cursorQuery }
                let countStart = ContinuousClock.now
                let counted = try store.count(ChordsetQuery(title: (.contains, "or"), limit: 50))
                let countSeconds = (ContinuousClock.now - countStart).seconds

                Output.print("query: pages of 50 from \(try store.profile().chordsets) chordsets, \(runs) runs each, in process")
                for (name, latencies) in results {
                    Output.print("  " + Output.pad(name, 36) + String(format: " p50 %.3f ms  p99 %.3f ms", latencies.percentile(50), latencies.percentile(99)))
                }
                Output.print(String(format: "  count with 'contains' (a full scan): %d matches in %.2f s", counted.count, countSeconds))
            } catch let error as ChordStoreError { throw Failure(error) }
        }
    }

    private func load(_ store: ChordStore) async throws {
        let existing = try store.profile().chordsets
        guard existing < chordsets else { return }
        let progress = ProgressReporter(label: "loading")
        defer { progress.finish() }
        var g = SplitMix64(seed: seed)
        var done = existing
        while done < chordsets {
            let batch = min(4_096, chordsets - done)
            let titles = (0..<batch).map { _ in
                "\(Self.words[Int(g.next() % UInt64(Self.words.count))]) \(Self.words[Int(g.next() % UInt64(Self.words.count))]) \(g.next() % 1_000)"
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for title in titles { group.addTask { try await store.execute(.addChordset(AddChordset(title: title))) } }
                try await group.waitForAll()
            }
            done += batch
            progress.report(UInt64(done), UInt64(chordsets))
        }
    }
}
