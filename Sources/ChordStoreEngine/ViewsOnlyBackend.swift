import ChordStoreRecords
import ChordStoreDomain
import Foundation
import LMDB

/// The views of a copy of a store's files, without the log: what a new follower serves
/// while its copy of the leader's log is still arriving (see
/// ``ChordStore/openViews(at:options:)``).
///
/// Reads of the current state (chordsets, chords, queries, sessions, stores, tokens) come
/// from the views as the copy made them. Everything that reads the log (as-of reads,
/// histories, a store's past records, `verify`, backups) fails with ``logArriving``, as
/// does a commit (the store takes none: ``ChordStore/openViews(at:options:)`` refuses
/// commands as a follower does before they reach it). The environment is opened
/// read-only: the files stay byte for byte as they came.
final class ViewsOnlyBackend: StorageBackend {
    /// The refusal of whatever needs the log, or writes.
    static let logArriving = ChordStoreError(
        .unavailable,
        "this follower is still receiving its copy of the leader's log: it serves the current state from the leader's views until then; as-of reads, histories and event feeds wait for the log (retry shortly, or ask another member)",
        reason: .stillReceivingLog)

    let viewsEnv: Environment
    let dbs: StoreDatabases
    /// The last event the views folded, read once: nothing changes them.
    private let head: LogHead

    /// Opens the views environment in `directory` (a copy's `views/`), which must exist
    /// and hold this version's layout.
    init(directory: URL) throws(ChordStoreError) {
        guard FileManager.default.fileExists(atPath: directory.appendingPathComponent("data.mdb").path) else {
            throw ChordStoreError(.notFound, "\(directory.path) holds no views (data.mdb)")
        }
        var options = Environment.Options()
        options.readOnly = true  // the copy's digest was checked: not a byte may change
        options.maxDatabases = 32
        do {
            viewsEnv = try Environment(directory: directory, options: options)
        } catch {
            throw ChordStoreError(.unavailable, "cannot open the views in \(directory.path): \(error)", cause: error)
        }
        do {
            let dbs = try StoreDatabases(readOnlyViews: viewsEnv)
            let (version, head) = try viewsEnv.withReadTransaction { txn in
                (try txn.get(dbs.meta, key: StoreDatabases.viewsKey).map(Array.init), try AppliedHead.read(txn, dbs))
            }
            guard let version, version.count == 1, LMDBBackend.readableViewsVersions.contains(version[0]) else {
                throw ChordStoreError(
                    .failedPrecondition,
                    "the views in \(directory.path) have layout \(version.map { $0.map(String.init).joined(separator: " ") } ?? "none"), which this chordstore does not read (it reads \(LMDBBackend.readableViewsVersions.sorted().map(String.init).joined(separator: " and ")))")
            }
            self.dbs = dbs
            self.head = head
        } catch {
            viewsEnv.close()
            throw ChordStoreError.wrapping(error)
        }
    }

    func commit(_ batch: [SubmittedCommand], applier: BatchApplier, generator: inout IncreasingIDs) -> [Result<CommittedEvent, ChordStoreError>] {
        batch.map { _ in .failure(Self.logArriving) }
    }

    func withStores<T>(_ body: (any StoresSnapshot) throws -> T) throws(ChordStoreError) -> T {
        if viewsEnv.isClosed { throw ChordStoreError(.unavailable, "the store is closed") }
        do {
            return try viewsEnv.withReadTransaction { txn in
                try body(LMDBStoreSpace(txn: txn, logTxn: nil, dbs: dbs, logHead: head))
            }
        } catch {
            throw ChordStoreError.wrapping(error)
        }
    }

    func logHead() throws(ChordStoreError) -> LogHead { head }
    func rebuild(progress: (UInt64, UInt64) -> Void) throws(ChordStoreError) { throw Self.logArriving }
    func appendReplicated(_ records: [[UInt8]], after previous: LogPosition, logged: (LogHead) -> Void) throws(ChordStoreError) -> LogHead {
        throw Self.logArriving
    }

    func importEvents(_ events: [RecordedEvent], store name: String, epoch: UInt64, decider: Decider) throws(ChordStoreError) -> LogHead {
        throw Self.logArriving
    }

    func truncate(after sequence: UInt64) throws(ChordStoreError) -> LogHead { throw Self.logArriving }
    func storedEpoch() throws(ChordStoreError) -> UInt64 { head.epoch }
    func storedGrant() throws(ChordStoreError) -> EpochGrant? { nil }
    func storeEpoch(_ epoch: UInt64, grant: EpochGrant?) throws(ChordStoreError) { throw Self.logArriving }
    func close() { viewsEnv.close() }
    var writeRefusal: ChordStoreError? { Self.logArriving }
    var logAbsence: ChordStoreError? { Self.logArriving }
    var storageUsage: StorageUsage? { nil }
    var snapshotFiles: SnapshotFiles? { nil }

    func forEachLogRecord(from sequence: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        throw Self.logArriving
    }
}
