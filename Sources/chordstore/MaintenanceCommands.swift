import ArgumentParser
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import SwiftProtobuf
import Foundation

/// `chordstore profile`: counts, as the seed app printed on save.
struct ProfileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profile", abstract: "Count chordsets and chords (chords = 8 × chordsets + the controls chord).")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var asOf: AsOfOption

    func run() async throws {
        if let point = try asOf.point() {
            let answer = try await withAccess(global, readOnly: true) { try await $0.readAsOf(point, .profile) }
            guard case .profile(let profile) = answer else { return }
            return try Output.profile(profile, json: global.json)
        }
        let profile = try await withAccess(global, readOnly: true) { try await $0.profile() }
        try Output.profile(profile, json: global.json)
    }
}

/// `chordstore verify`: checks every record and compares a replay with the views (and,
/// for a directory served with `--live-state`, with the state saved last and the state
/// loaded from it).
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check the log and the views.",
        discussion: prose("""
            Works on a data directory (--data DIR, default $CHORDSTORE_DATA or
            ./chordstore-data) with its server stopped; --server is refused.

            Checks every event's checksum chain and sequence (no gap), replays the whole log
            into a fresh state checking the invariants, and compares the result with the
            live views. Reports the first problem with its sequence number; exits 1 if any.

            A directory a server with --live-state used (it holds live-state) is opened as
            that server opens it: the state saved last is loaded and the log's later events
            replayed into memory. Verify then compares the replay with that state, with the
            state saved last (if a start would load it: a file a start would set aside only
            costs that start a longer replay) and with the views, brought up first (caught up
            from the log, or loaded from the state in memory). It holds the state in memory
            twice meanwhile, plus the replay.

            What it cannot see: LMDB keeps no checksums of its own pages, so damage to a
            page header or a B-tree branch page may make LMDB fail (or crash) while reading
            it, and damage in a free page is never read at all (nor does it matter). The
            views carry no checksums: damage there shows only as a difference from the
            replay, which rebuild repairs. A server checks the last 100,000 events when it
            starts and never serves a damaged one.
            """))
    @OptionGroup var global: GlobalOptions

    func validate() throws { try global.refuseServer(for: "verify") }

    func run() async throws {
        let started = ContinuousClock.now
        try global.requireDataDirectory(toDo: "nothing to verify")
        let live = FileManager.default.fileExists(
            atPath: URL(fileURLWithPath: global.dataDirectory).appendingPathComponent(ChordStore.liveStateFileName).path)
        let report = try await withStore(global, stoppedServerOnly: "verify", liveState: live) { store in
            let progress = ProgressReporter(label: "verifying")
            defer { progress.finish() }
            return try store.verify(progress: progress.report)
        }
        let seconds = (ContinuousClock.now - started).seconds
        if global.json {
            try Output.json(Chordstore_V1_VerifyReport.with {
                $0.events = report.events
                $0.sound = report.isSound
                $0.code = report.problem.map { "\($0.code)" } ?? ""
                $0.problem = report.problem?.message ?? ""
                $0.sequence = report.sequence ?? 0
                $0.seconds = seconds
            })
            if !report.isSound { throw ExitCode.failure }
            return
        }
        if let problem = report.problem {
            let place = report.sequence.map { " at event \($0)" } ?? ""
            throw Failure(ChordStoreError(problem.code, "verify failed\(place): \(problem.message)"))
        }
        Output.print("ok: \(report.events) events verified in \(String(format: "%.2f", seconds)) s; \(live ? "the state in memory, the state saved last (if the next start would load it) and the views match" : "the views match") a replay of the log")
    }
}

/// `chordstore rebuild`: drops the views and replays the log.
struct RebuildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rebuild",
        abstract: "Drop the views and rebuild them by replaying the whole log.",
        discussion: prose("""
            Works on a data directory (--data DIR, default $CHORDSTORE_DATA or
            ./chordstore-data) with its server stopped; --server is refused.

            Replays the log into memory, then replaces the views in one transaction: if it is
            interrupted, the old views stay. Needs memory for the live chordsets (not the log).
            """))
    @OptionGroup var global: GlobalOptions

    func validate() throws { try global.refuseServer(for: "rebuild") }

    func run() async throws {
        let started = ContinuousClock.now
        try global.requireDataDirectory(toDo: "nothing to rebuild")
        // The events of the whole log (every store's), as verify counts them.
        let (chordsets, events) = try await withStore(global, stoppedServerOnly: "rebuild") { store in
            let progress = ProgressReporter(label: "rebuilding")
            defer { progress.finish() }
            try await store.rebuild(progress: progress.report)
            return (try Self.chordsets(store), try store.lastLogSequence())
        }
        let seconds = (ContinuousClock.now - started).seconds
        if global.json {
            return try Output.json(Chordstore_V1_RebuildReport.with {
                $0.events = events
                $0.chordsets = UInt64(chordsets)
                $0.seconds = seconds
            })
        }
        Output.print("rebuilt the views from \(events) events in \(String(format: "%.2f", seconds)) s")
    }

    /// The chordsets of every store, as the rebuilt views hold them.
    private static func chordsets(_ store: ChordStore) throws(ChordStoreError) -> Int {
        var total = 0
        var after: String?
        while true {
            let page = try store.stores(after: after, limit: 1_000)
            total += page.reduce(0) { $0 + $1.chordsets }
            guard page.count == 1_000, let last = page.last else { return total }
            after = last.name
        }
    }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double {
        let (s, attoseconds) = components
        return Double(s) + Double(attoseconds) / 1e18
    }
}
