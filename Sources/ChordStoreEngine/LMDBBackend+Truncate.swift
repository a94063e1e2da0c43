import ChordStoreRecords
import ChordStoreDomain
import LMDB
import Synchronization

/// Cutting the log back (a former leader's last events, which the new leader never had),
/// with the views, or, with live state, the state in memory.
extension LMDBBackend {
    /// Cuts the log after `sequence`; with live state, the state first.
    func truncate(after sequence: UInt64) throws(ChordStoreError) -> LogHead {
        guard let live else { return try truncateLog(after: sequence) }
        // The live state is cut first (readers then see no cut event), the log after it
        // (the views are left as they are); if that fails, the state is replayed from the
        // uncut log again.
        return try viewsWriter.withLock { _ throws(ChordStoreError) in
            try replaceLive(live, through: sequence)
            let head: LogHead
            do {
                head = try truncateLog(after: sequence)
            } catch {
                // The log was not cut: neither is the state.
                try? replaceLive(live, through: nil)
                viewsApplied.store((try? viewsHead().sequence) ?? 0, ordering: .releasing)
                throw ChordStoreError.wrapping(error)
            }
            viewsApplied.store((try? viewsHead().sequence) ?? 0, ordering: .releasing)
            return head
        }
    }

    /// Cuts the log after `sequence`, and the views with it.
    private func truncateLog(after sequence: UInt64) throws(ChordStoreError) -> LogHead {
        // The views are rebuilt from the records up to `sequence` first, in one
        // transaction, so no reader ever sees the views of the cut log; then the records
        // after it go, in one transaction of the log. Should the process die between the
        // two, the views are caught up with the uncut log when it reopens, and the cut
        // is made again by whoever asked for it. With live state the views are left as
        // they are: views past the cut are another log's, rebuilt when they are brought up.
        if live == nil { try rebuildViews(through: sequence, progress: { _, _ in }) }
        var failure: (any Error)?
        do {
            try withGrowingMap {
                try logEnv.withWriteTransaction { txn in try Self.deleteRecords(after: sequence, txn, dbs) }
            }
        } catch {
            failure = error
        }
        do {
            let head = try logEnv.withReadTransaction { txn in try Self.readHead(txn, dbs) }
            committedHead.withLock { $0 = head }
        } catch {
            failure = failure ?? error
        }
        if let failure {
            // The views stop at `sequence`, the log may not: fold its events back in (with
            // live state they are brought up when read).
            if live == nil { try? repairViews() }
            throw ChordStoreError.wrapping(failure)
        }
        // Snapshot files are numbered in store default's sequence, not in log positions.
        let defaultHead = (try? withSnapshot(store: StoreName.default) { $0.record.head }) ?? 0
        snapshotFiles?.discard(after: defaultHead)
        // A cut that removed the damaged records lets the store take writes again.
        if case .damaged? = viewsFault.withLock({ $0 }), checkLogTail() == nil {
            viewsFault.withLock { $0 = nil }
        }
        return committedHead.withLock { $0 }
    }

    /// Deletes the log's records after `sequence`, in `txn`.
    static func deleteRecords(after sequence: UInt64, _ txn: Transaction, _ dbs: StoreDatabases) throws {
        var doomed: [[UInt8]] = []
        try txn.withCursor(dbs.log) { cursor in
            var entry = try StoreKeys.sequence(sequence + 1).withUnsafeBytes { try cursor.seek(atLeast: $0) }
            while let found = entry {
                doomed.append(Array(found.key))
                entry = try cursor.next()
            }
        }
        for key in doomed { _ = try txn.delete(dbs.log, key: key) }
    }
}
