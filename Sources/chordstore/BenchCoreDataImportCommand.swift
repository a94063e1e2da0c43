import ArgumentParser
import ChordStoreDomain
import ChordStoreReplica
import Foundation

/// `chordstore bench core-data-import FILE`: how long a replica takes to import a Core
/// Data store (issue 40's target: 10,000 chordsets in under 2 s).
struct BenchCoreDataImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "core-data-import",
        abstract: "Time the import of a Core Data store into a fresh replica (dry, then for real), median of N rounds.",
        discussion: prose("""
            Make the store with tools/core-data-fixture (or use an app's), then time its
            import into a new replica directory each round: the dry run (reading, planning,
            applying every write to a copy of the view) and the import (the same, then
            queueing the writes in one transaction). tools/bench/core-data-import
            does both steps:

              tools/core-data-fixture --model performer --chordsets 10000 /tmp/performer-10k.sqlite
              chordstore bench core-data-import /tmp/performer-10k.sqlite
            """))

    @Argument(help: ArgumentHelp("The Core Data store's SQLite file.", valueName: "FILE.sqlite")) var file: String
    @Option(help: "Rounds, each into a fresh replica (at most 100).") var rounds = 3

    func validate() throws {
        guard (1...100).contains(rounds) else { throw ValidationError("--rounds must be 1...100") }
    }

    func run() async throws {
        var dry: [Duration] = []
        var real: [Duration] = []
        var report: CoreDataImportReport?
        for round in 1...rounds {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("chordstore-bench-import-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let replica: Replica
            do {
                replica = try await Replica.open(at: directory, store: "bench")
            } catch {
                throw Failure(ChordStoreError(error.statusCode, error.message))
            }
            var options = CoreDataImportOptions()
            options.dryRun = true
            do throws(CoreDataImportError) {
                var start = ContinuousClock.now
                _ = try await replica.importCoreDataStore(at: URL(fileURLWithPath: file), options: options)
                dry.append(ContinuousClock.now - start)
                start = ContinuousClock.now
                report = try await replica.importCoreDataStore(at: URL(fileURLWithPath: file))
                real.append(ContinuousClock.now - start)
            } catch {
                replica.close()
                throw Failure(ChordStoreError(error.statusCode, error.message))
            }
            replica.close()
            FileHandle.standardError.write(Data("bench core-data-import: round \(round) of \(rounds): \(Self.seconds(real.last!))\n".utf8))
        }
        guard let report else { return }
        let rows = report.rowsRead.values.reduce(0, +)
        let median = real.sorted()[real.count / 2]
        Output.print("\(report.model.rawValue) store: \(Output.count(report.rowsRead["Chordset"] ?? 0, "chordset")), \(Output.count(rows, "row")); \(Output.count(report.writesQueued, "write")) queued")
        Output.print("dry run (read, plan, apply to a copy of the view): median \(Self.seconds(dry.sorted()[dry.count / 2])) of \(rounds)")
        Output.print("import (the same, then queue the writes in one transaction): median \(Self.seconds(median)) of \(rounds), \(Int(Double(report.chordsetsAdded) / Self.double(median))) chordsets/s")
    }

    static func double(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func seconds(_ duration: Duration) -> String { String(format: "%.3f s", double(duration)) }
}
