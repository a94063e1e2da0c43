import ChordStoreRecords
import ChordStoreDomain
import LMDB

/// The revisions every event of a store advances (``RevisionKey/collection``; and
/// ``RevisionKey/bulk`` and ``RevisionKey/controls``, which few events do) held for one
/// write transaction and written once, at its end, instead of read and written again
/// by each event of the batch.
///
/// Owned by the transaction's ``LMDBStoreSpace``; every ``LMDBStateView`` it makes reads
/// through it, so the batch sees its own changes. ``flush(_:dbs:)`` must run before the
/// transaction commits; ``forget(store:)`` when a store's views are deleted.
final class PendingRevisions {
    private struct Key: Hashable {
        let store: UInt32
        let key: RevisionKey
    }

    private var values: [Key: Revision] = [:]

    /// Whether `key` is one this holds (a store-wide key, not a chordset's: a batch
    /// advances each chordset's a few times at most).
    static func holds(_ key: RevisionKey) -> Bool {
        if case .chordset = key { return false }
        return true
    }

    /// The revision of `key` in `store` set in this transaction, if any.
    func revision(store: UInt32, _ key: RevisionKey) -> Revision? { values[Key(store: store, key: key)] }

    /// Sets the revision of `key` in `store`, to be written by ``flush(_:dbs:)``.
    func set(store: UInt32, _ key: RevisionKey, _ revision: Revision) { values[Key(store: store, key: key)] = revision }

    /// Drops what is held for `store` (its views were deleted in this transaction).
    func forget(store: UInt32) { values = values.filter { $0.key.store != store } }

    /// Writes what is held to `txn`'s revisions database and empties it.
    func flush(_ txn: Transaction, dbs: StoreDatabases) throws {
        for (key, revision) in values {
            try ScopedTransaction(txn, store: key.store).putRevision(dbs.revisions, key.key, revision)
        }
        values.removeAll(keepingCapacity: true)
    }
}
