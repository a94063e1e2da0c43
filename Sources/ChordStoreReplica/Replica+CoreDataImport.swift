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
    /// It blocks its caller while it reads the file and decides the writes (0.8 s for
    /// 10,000 chordsets on the benchmark machine; reads of the view go on meanwhile, from
    /// the view before the import until it is queued): from an app's main actor, call the
    /// `async` one. A dry run may be made on a replica opened for reading.
    public func importCoreDataStore(
        at file: URL, options: CoreDataImportOptions = CoreDataImportOptions()
    ) throws(CoreDataImportError) -> CoreDataImportReport {
        guard options.dryRun || !isReadOnly else {
            throw CoreDataImportError(.storage, "the replica was opened for reading: the app imports, not its extensions")
        }
        let file = try CoreDataFile.read(at: file, colorColumns: options.colorColumns)
        // Decided off the lock, on a copy of the model: reads and writes go on meanwhile.
        // Should the view move before the writes are queued (a write, a pull), they are
        // decided again, off the lock twice more, then under it.
        var attempt = 0
        while true {
            attempt += 1
            let base = core.withLock { (model: $0.model, nextKey: $0.nextKey, closed: $0.closed) }
            guard !base.closed else { throw CoreDataImportError(.storage, "the replica is closed") }
            let trial = try decide(file, options: options, model: base.model, nextKey: base.nextKey)
            if options.dryRun { return trial.plan.report }
            if let report = try queue(trial, decidedAt: (base.model.version, base.nextKey), file: file, options: options, last: attempt == 3) {
                if report.writesQueued > 0 { changed() }
                return report
            }
        }
    }

    /// Queues the writes of `trial` if the view is still the one they were decided on
    /// (`nil` if it moved, unless `last`: then they are decided again under the lock).
    /// Reads go on from the view before them while the queue's transaction runs.
    private func queue(
        _ decided: (plan: CoreDataImportPlan, model: ReplicaModel, writes: [PendingWrite]), decidedAt base: (version: UInt64, nextKey: UInt64),
        file: CoreDataFile, options: CoreDataImportOptions, last: Bool
    ) throws(CoreDataImportError) -> CoreDataImportReport? {
        var held: ReadState?
        defer { retire(held) }
        return try core.withLock { core throws(CoreDataImportError) -> CoreDataImportReport? in
            guard !core.closed else { throw CoreDataImportError(.storage, "the replica is closed") }
            var trial = decided
            if core.model.version != base.version || core.nextKey != base.nextKey {
                guard last else { return nil }
                trial = try decide(file, options: options, model: core.model, nextKey: core.nextKey)
            }
            return try holdingReads(at: ReadState(core), held: &held) { () throws(CoreDataImportError) -> CoreDataImportReport in
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
        }
    }

    /// Plans the import against `model`'s view and decides each write on a copy of it:
    /// the plan (a write the store's rules refuse moves to the report), the copy, and the
    /// writes to queue, keyed from `nextKey`.
    private func decide(
        _ file: CoreDataFile, options: CoreDataImportOptions, model: ReplicaModel, nextKey: UInt64
    ) throws(CoreDataImportError) -> (plan: CoreDataImportPlan, model: ReplicaModel, writes: [PendingWrite]) {
        var plan = try CoreDataImportPlan.make(
            file, options: options, limits: Limits(), state: model.local.state, ownCommandIDs: Set(model.local.ownCommandIDs.values))
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
