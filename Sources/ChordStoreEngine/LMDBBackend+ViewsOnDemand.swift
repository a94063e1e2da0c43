import ChordStoreRecords
import ChordStoreDomain
import Foundation
import LMDB
import Synchronization

/// The views with live state, where they take no commit: brought to the state in memory
/// when something reads them (a copy of the files, `verify`), or to the log when the
/// state cannot be built (a damaged log), and the checks `verify` makes of the state
/// saved last.
extension LMDBBackend {
    /// The live state could not be built (``liveFailure``): the store serves its views, as
    /// without live state. They took no commit while the state was live, so they are
    /// brought to the log here as an opening without live state would
    /// (``openViews(markFailure:progress:)``: caught up or rebuilt; kept as they are if
    /// they were not marked open, `markFailure`, and can serve reads), or, if a record
    /// cannot be read and they stop before it, rebuilt from the records before it (views
    /// of this log that reach past it, folded before the damage, are kept: they hold
    /// more); writes are then refused. Throws, as that opening would, when the views can
    /// serve no read.
    func fallBackToViews(markFailure: ChordStoreError?, progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) {
        var lastGood: UInt64 = 0
        let intact = (try? RecordChain.forEach(in: LogRecords(backend: self), from: 1) { sequence, _ in
            lastGood = sequence
            return true
        }) != nil
        if intact || markFailure != nil {
            try openViews(markFailure: markFailure, progress: progress)
            if intact { return }
        } else {
            let applied = try viewsHead().sequence
            let ofThisLog = (try? viewsPlan().servesReads) ?? false
            if !ofThisLog || applied < lastGood {
                do {
                    try viewsWriter.withLock { _ throws(ChordStoreError) in try rebuildViews(through: lastGood, progress: progress) }
                } catch where ofThisLog && error.code == .resourceExhausted {
                    // A full disk: views of this log serve as they are.
                }
            }
        }
        let failure = liveFailure.withLock { $0 }
        viewsFault.withLock { fault in
            if case .damaged? = fault { return }
            fault = .damaged(ChordStoreError(
                .dataLoss,
                "the log is damaged after event \(lastGood) (\(failure?.message ?? "a record cannot be read")): the views hold the events before it. Writes are refused; restore the data directory from a backup or a replica",
                reason: .logDamaged))
        }
    }

    /// `verify`'s check of the state saved last: the state the next start would load,
    /// against a replay of the log up to the event it reflects. A file the next start
    /// would set aside (damaged, of another fold or another log) is not a problem: it
    /// only costs that start a longer replay.
    func verifySavedLive(progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) -> VerifyReport {
        guard case .success(let set) = savedLive(through: committedHead.withLock { $0 }) else {
            return VerifyReport(events: 0, problem: nil)
        }
        do {
            let report = try logEnv.withReadTransaction { txn in
                try Verifier.verify(InMemoryStores(all: set, records: LogTransactionRecords(txn: txn, log: dbs.log)), backend: self, progress: progress)
            }
            guard let problem = report.problem else { return report }
            var named = report
            named.problem = ChordStoreError(
                problem.code, "the state saved in \(liveStateURL.path) differs from a replay of the log: \(problem.message)", reason: problem.reason)
            return named
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    /// Folds the log's events the views lack into them, in one transaction of the views
    /// (``bringViewsUp()`` asks for it up to ``maxCatchUp`` events behind). A failure is
    /// recorded as a fault of the views.
    func catchUpViews() {
        viewsWriter.withLock { _ in
            guard !viewsEnv.isClosed else { return }
            guard viewsApplied.load(ordering: .acquiring) < committedHead.withLock({ $0 }).sequence else {
                // Views that hold every event are behind nothing (a fault left by an open
                // on a full disk, say).
                viewsFault.withLock { fault in if case .behind? = fault { fault = nil } }
                return
            }
            do {
                try ensureMarkedOpen()
                try withGrowingMap(only: viewsEnv) { try foldMissingEvents() }
                viewsApplied.store(try viewsHead().sequence, ordering: .releasing)
                viewsFault.withLock { fault in if case .behind? = fault { fault = nil } }
                noteViewsCommitted()
            } catch {
                let wrapped = ChordStoreError.wrapping(error)
                viewsFault.withLock { fault in
                    // Damage stays until a rebuild: a passing failure does not hide it.
                    if case .damaged? = fault { return }
                    fault = if wrapped.code == .dataLoss || wrapped.reason == .diverged {
                        .damaged(ChordStoreError(
                            .unavailable, "the views could not take events the log holds (\(wrapped.message)); restart the server to rebuild them"))
                    } else {
                        .behind(wrapped)
                    }
                }
            }
        }
    }

    /// How many events the views lack (live state only).
    var viewsLag: UInt64 {
        let head = committedHead.withLock { $0 }.sequence
        let applied = viewsApplied.load(ordering: .acquiring)
        return head > applied ? head - applied : 0
    }

    /// Brings the views to the live state, for what reads them (a copy of the files, which
    /// a new follower serves reads from while its log arrives; `verify`): with live state
    /// they take no commit. Up to ``maxCatchUp`` events behind, the log's events are
    /// folded into them; further, they are loaded afresh from a copy of the live state, as
    /// a rebuild loads them, without replaying the log (``loadViews(_:)``). Without live
    /// state they are current already.
    func bringViewsUp() throws(ChordStoreError) {
        guard let live else { return }
        let plan: ViewsPlan
        do {
            plan = try viewsPlan()
        } catch {
            throw ChordStoreError.wrapping(error)
        }
        switch plan {
        case .current:
            return
        case .catchUp:
            catchUpViews()
            if viewsLag > 0, let fault = viewsFault.withLock({ $0 }) { throw fault.error }
        case .rebuild:
            try viewsWriter.withLock { _ throws(ChordStoreError) in
                try ensureMarkedOpen()
                let set = try residentWhole(live.read { $0 })
                try loadViews(set)
                viewsApplied.store(set.logHead.sequence, ordering: .releasing)
                viewsFault.withLock { fault in if case .behind? = fault { fault = nil } }
            }
        }
    }
}
