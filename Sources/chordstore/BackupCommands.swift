import ChordStoreRecords
import ArgumentParser
import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreReplication
import ChordStoreWire
import Foundation

/// `chordstore backup --to DIR`: a consistent copy of a server's (or a data directory's)
/// files, taken while it serves.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy a server's data files into a new directory while it serves (an online backup).",
        discussion: prose("""
            Asks the server at --server (an admin token) for a consistent copy of its data
            files: LMDB's compacting copy of the views, then of the log, each from one read
            transaction, while writes go on. DIR must be new or empty; it receives
            views/data.mdb, data.mdb and chordstore-backup.json (the copied log's last
            event, and each file's size and digest, checked as it arrives). With --data, the
            copy is of a data directory no server has open. Restore it with `chordstore
            restore --from DIR --data NEWDIR`. Tokens are in the log, so they are backed
            up; the node's own admin token (DATA/admin.token) is not. See docs/OPERATIONS.md.
            """))
    @OptionGroup var global: GlobalOptions
    @Option(help: ArgumentHelp("The directory to write the backup to (new or empty).", valueName: "DIR")) var to: String

    func run() async throws {
        let target = URL(fileURLWithPath: to)
        let cleanup = Cleanup(target)
        let started = ContinuousClock.now
        let progress = ProgressReporter(label: "copying", bytes: true)
        let manifest: BackupManifest
        do {
            defer { progress.finish() }
            if global.data != nil {
                try global.requireDataDirectory(toDo: "nothing to back up")
                manifest = try await withStore(global) { store in
                    let receiver = try BackupReceiver(directory: target)
                    let begun = Date()
                    try await store.copyFiles { part in
                        try receiver.take(part)
                        progress.report(receiver.bytesWritten, receiver.bytesWritten)
                    }
                    return try receiver.finish(node: "local", started: begun)
                }
            } else {
                let client = try global.client(retry: .once)
                do {
                    manifest = try await BackupDownload.download(from: client, into: target, progress: progress.report)
                    await client.close()
                } catch let error as ClientError {
                    await client.close()
                    throw Failure(ChordStoreError(error.code, error.message, reason: error.reason))
                } catch {
                    await client.close()
                    throw error
                }
            }
        } catch {
            // A partial copy has no manifest, and restore refuses it; leave nothing behind
            // (only in a directory that was new or empty: never remove what was there).
            cleanup.run(target)
            if let error = error as? ChordStoreError { throw Failure(error) }
            throw error
        }
        let seconds = (ContinuousClock.now - started).seconds
        let files = manifest.files.map { "\($0.name) \(Self.size($0.bytes))" }.joined(separator: ", ")
        Output.print(
            "backed up log position \(manifest.logSequence) (epoch \(manifest.logEpoch)) of \(manifest.node) to \(target.path) in \(String(format: "%.2f", seconds)) s: \(files)")
    }

    /// What a failed backup or restore may remove of `directory`: the directory, if it
    /// did not exist; its contents, if it was empty; nothing, if it held anything.
    enum Cleanup {
        case directory, contents, nothing

        init(_ directory: URL) {
            if !FileManager.default.fileExists(atPath: directory.path) {
                self = .directory
            } else if (try? FileManager.default.contentsOfDirectory(atPath: directory.path))?.isEmpty == true {
                self = .contents
            } else {
                self = .nothing
            }
        }

        /// Removes what a failed backup or restore wrote into `directory`.
        func run(_ directory: URL) {
            switch self {
            case .directory:
                try? FileManager.default.removeItem(at: directory)
            case .contents:
                for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] {
                    try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
                }
            case .nothing:
                break
            }
        }
    }

    static func size(_ bytes: UInt64) -> String {
        bytes >= 1 << 20 ? String(format: "%.1f MiB", Double(bytes) / 1_048_576) : String(format: "%.1f KiB", Double(bytes) / 1_024)
    }
}

/// `chordstore restore --from DIR --data NEWDIR`: a backup made into a data directory.
struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Make a new data directory from a backup.",
        discussion: prose("""
            Checks the backup in DIR (its manifest, and each file's size and digest), copies
            its files into NEWDIR (which must be new or empty: restore never overwrites a
            data directory), opens the store there, catching its views up with its log, and
            checks that the log ends at the event the manifest names. Then, unless
            --no-verify, it verifies the restored store as `chordstore verify` does. A
            failed restore, one that fails verify included, leaves nothing to serve: it
            removes NEWDIR if it made it, or what it wrote into it. Serve
            it with `chordstore serve --data NEWDIR`; the server writes a new admin token
            there on first start.
            """))
    @Option(help: ArgumentHelp("The backup to restore.", valueName: "DIR")) var from: String
    @Option(help: ArgumentHelp("The data directory to create (new or empty).", valueName: "NEWDIR")) var data: String
    @Flag(help: "Skip the full check of the restored store (checksums, replay against the views).") var noVerify = false

    func run() async throws {
        let target = URL(fileURLWithPath: data)
        let cleanup = BackupCommand.Cleanup(target)
        let started = ContinuousClock.now
        let head: LogPosition
        do {
            let progress = ProgressReporter(label: "checking and copying", bytes: true)
            defer { progress.finish() }
            head = try ChordStore.restore(backup: URL(fileURLWithPath: from), into: target, progress: progress.report)
        } catch {
            cleanup.run(target)
            throw Failure(error)
        }
        var line = "restored log position \(head.sequence) (epoch \(head.epoch)) into \(target.path)"
        if !noVerify {
            do {
                line += "; verify: ok, \(try Self.verify(target)) events"
            } catch {
                cleanup.run(target)  // a store that fails verify is no restore: leave nothing to serve by mistake
                throw Failure(error)
            }
        }
        Output.print(line + " in \(String(format: "%.2f", (ContinuousClock.now - started).seconds)) s")
    }

    /// Verifies the store restored in `directory` (closed again before returning);
    /// returns the number of events checked.
    private static func verify(_ directory: URL) throws(ChordStoreError) -> UInt64 {
        let store = try ChordStore.open(at: directory)
        defer { store.close() }
        let progress = ProgressReporter(label: "verifying")
        defer { progress.finish() }
        let report = try store.verify(progress: progress.report)
        if let problem = report.problem {
            throw ChordStoreError(problem.code, "the restored store fails verify\(report.sequence.map { " at event \($0)" } ?? ""): \(problem.message); nothing was left in \(directory.path)")
        }
        return report.events
    }
}
