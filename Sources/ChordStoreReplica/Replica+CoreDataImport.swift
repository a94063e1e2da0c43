import ChordStoreDomain
public import Foundation
import Synchronization

extension Replica {
    /// Imports an Imager or Image Performer Core Data store (its SQLite file, with its
    /// `-wal` and `-shm` beside it) into the replica as queued writes, which sync like any
    /// other write made offline: one add per chordset (its id, title, creation date and
    /// eight chords kept), and the controls chord. Call it once, at the first launch of
    /// the version that adopts ChordStore (docs/DEVICES.md, "Coming from Core Data").
    ///
    /// The store is read read-only, in one read transaction, so the app may still have it
    /// open. Every row is imported or reported with the rule that handled it (filled,
    /// placed, skipped); nothing is written unless every write is queued (one transaction
    /// of the queue). Importing again adds nothing: a chordset this device imported
    /// before, or whose id the store holds, is skipped and named in the report. The
    /// server records each chordset once whichever device sends it (its command id is
    /// derived from its id).
    ///
    /// It blocks its caller while it reads the file and decides the writes (0.9 s for
    /// 10,000 chordsets on the benchmark machine; reads of the view go on meanwhile): from
    /// an app's main actor, call the `async` one.
    public func importCoreDataStore(
        at file: URL, options: CoreDataImportOptions = CoreDataImportOptions()
    ) throws(CoreDataImportError) -> CoreDataImportReport {
        guard !isReadOnly else {
            throw CoreDataImportError(.storage, "the replica was opened for reading: the app imports, not its extensions")
        }
        let store = try CoreDataStore.read(at: file, colorColumns: options.colorColumns)
        // Decided off the lock, on a copy of the model: reads go on meanwhile. Should the
        // view change before the writes are queued (a write, a pull), they are decided
        // again under the lock.
        let base = core.withLock { (model: $0.model, nextKey: $0.nextKey) }
        var trial = try decide(store, options: options, model: base.model, nextKey: base.nextKey)
        let report = try core.withLock { core throws(CoreDataImportError) -> CoreDataImportReport in
            guard !core.closed else { throw CoreDataImportError(.storage, "the replica is closed") }
            if core.model.version != base.model.version || core.nextKey != base.nextKey {
                trial = try decide(store, options: options, model: core.model, nextKey: core.nextKey)
            }
            guard !options.dryRun else { return trial.plan.report }
            do throws(ReplicaError) {
                try storage.append(trial.writes, session: session)
            } catch {
                throw CoreDataImportError(.storage, "the writes could not be stored on the device (nothing was queued): \(error.message)")
            }
            core.model.adopt(trial.writes.count, from: trial.model)
            core.nextKey += UInt64(trial.writes.count)
            trial.plan.report.writesQueued = trial.writes.count
            if !trial.writes.isEmpty { core.wake?.yield() }
            return trial.plan.report
        }
        if report.writesQueued > 0 { changed() }
        return report
    }

    /// Plans the import against `model`'s view and decides each write on a copy of it:
    /// the plan (a write the store's rules refuse moves to the report), the copy, and the
    /// writes to queue, keyed from `nextKey`.
    private func decide(
        _ store: CoreDataStore, options: CoreDataImportOptions, model: ReplicaModel, nextKey: UInt64
    ) throws(CoreDataImportError) -> (plan: CoreDataImportPlan, model: ReplicaModel, writes: [PendingWrite]) {
        var plan = try CoreDataImportPlan.make(
            store, options: options, limits: Limits(), state: model.local.state, ownCommandIDs: Set(model.local.ownCommandIDs.values))
        var model = model
        var generator = SystemRandomNumberGenerator()
        var writes: [PendingWrite] = []
        writes.reserveCapacity(plan.writes.count)
        let now = Instant.now
        for planned in plan.writes {
            do throws(ChordStoreError) {
                writes.append(try model.write(
                    planned.command, commandID: planned.commandID, key: nextKey + UInt64(writes.count), now: now, using: &generator))
            } catch {
                plan.refused(planned, error)
            }
        }
        return (plan, model, writes)
    }

    /// ``importCoreDataStore(at:options:)`` in a detached task: the caller (the main
    /// actor, say) does not wait for the file.
    public func importCoreDataStore(
        at file: URL, options: CoreDataImportOptions = CoreDataImportOptions()
    ) async throws(CoreDataImportError) -> CoreDataImportReport {
        let importing = Task.detached(priority: .userInitiated) { () throws(CoreDataImportError) -> CoreDataImportReport in
            try self.importCoreDataStore(at: file, options: options)
        }
        do {
            return try await importing.value
        } catch let error as CoreDataImportError {
            throw error
        } catch {
            throw CoreDataImportError(.storage, "the import stopped: \(error)")
        }
    }
}
