import ChordStoreDomain
import Foundation

/// What a replica knows, as plain values and without I/O: the store as the server
/// confirmed it (``confirmed``, folded from the change feed), the writes made on the
/// device since (``pending``, in order), and the view the app sees (``local``): the
/// confirmed store with the pending writes applied on top.
///
/// Every change of the confirmed store *rebases* the pending writes: the view is the
/// confirmed store again, with each pending write decided anew on top, in order, as the
/// server will decide it when the write arrives. A pending write that no longer applies
/// (its chordset was deleted meanwhile) is left out of the view but stays queued: the
/// server has the last word, and its refusal takes the write back for good.
struct ReplicaModel: Sendable {
    /// The device's session: its writes, undos and redos are recorded under it.
    let session: String
    private let decider = Decider()
    private(set) var confirmed = ReplicaView()
    private(set) var pending: [PendingWrite] = []
    private(set) var local = ReplicaView()
    /// Command ids of pending writes the view leaves out (they no longer apply).
    private(set) var shadowed: Set<String> = []
    /// Command ids of queued undos and redos that would now revert another change than
    /// the one they name (that one was refused): the device refuses them, never sends them.
    private(set) var misdirected: [String: String] = [:]
    /// Bumped on every change of ``local`` (an import checks that the model it decided
    /// against is still the one it commits to).
    private(set) var version: UInt64

    /// An empty model; `version` continues a model this one replaces.
    init(session: String, version: UInt64 = 0) {
        self.session = session
        self.version = version
    }

    /// Decides `command` against the view and applies it there: the write as queued
    /// (fully specified), or the refusal the server would give.
    mutating func write(
        _ command: Command, commandID: String, key: UInt64, now: Instant, using generator: inout some IDGenerator
    ) throws(ChordStoreError) -> PendingWrite {
        let decision = try decider.decide(
            command, session: session, state: local.state, changes: local.changes, log: local, timestamp: now, using: &generator)
        let write = PendingWrite(
            key: key, commandID: commandID, command: Self.specified(command, by: decision.event), made: now,
            revertsCommandID: local.commandID(revertedBy: decision.mark), session: session)
        try local.fold(
            Change(sequence: local.head + 1, session: session, event: decision.event, mark: decision.mark), session: session, commandID: commandID)
        pending.append(write)
        version += 1
        return write
    }

    /// Takes the last `count` writes of `trial`, a copy of this model at this version that
    /// decided them (off the replica's lock): its view, and the writes on its queue.
    /// This model's queue keeps its own entries (a confirmation may have come meanwhile).
    mutating func adopt(_ count: Int, from trial: ReplicaModel) {
        precondition(trial.version == version + UInt64(count), "the trial was not made from this version")
        local = trial.local
        pending.append(contentsOf: trial.pending.suffix(count))
        version = trial.version
    }

    /// Folds events of the change feed (the next ones after the confirmed head, in
    /// order, with their command ids);
    /// returns the pending writes they confirm, which leave the queue, with their
    /// sequence numbers.
    ///
    /// Folds in place (the view lets go of its share of the state first, so nothing is
    /// copied unless a reader holds the state: the replica's ``Replica/ReadState`` during a
    /// batch, which costs one copy per batch): if it throws, the model is unusable and
    /// must be restored from disk.
    ///
    /// A pending write is matched by its command id whatever the event's session: a
    /// directory copied from another installation sends the original's queued writes under
    /// the original's session (``PendingWrite/session``), and the server answers a command
    /// id it has with its first event, whichever device sent it first.
    mutating func applyPulled(_ events: [Change], commandIDs: [String]) throws(ChordStoreError) -> [(PendingWrite, UInt64)] {
        local = ReplicaView()
        var arrived: [String: UInt64] = [:]
        for (change, commandID) in zip(events, commandIDs) {
            guard change.sequence == confirmed.head + 1 else {
                throw ChordStoreError(.dataLoss, "the feed sent event \(change.sequence) after \(confirmed.head)")
            }
            try confirmed.fold(change, session: session, commandID: commandID)
            if !commandID.isEmpty { arrived[commandID] = change.sequence }
        }
        let done = pending.compactMap { write in arrived[write.commandID].map { (write, $0) } }
        if !done.isEmpty { pending.removeAll { arrived[$0.commandID] != nil } }
        rebase()
        return done
    }

    /// Records the server's answer to a pending write: the sequence it was recorded at.
    mutating func confirm(commandID: String, sequence: UInt64) -> PendingWrite? {
        guard let at = pending.firstIndex(where: { $0.commandID == commandID }) else { return nil }
        pending[at].confirmedSequence = sequence
        return pending[at]
    }

    /// Takes back a pending write the server refused; the view is rebased without it.
    mutating func reject(commandID: String) -> PendingWrite? {
        guard let at = pending.firstIndex(where: { $0.commandID == commandID }) else { return nil }
        let write = pending.remove(at: at)
        rebase()
        return write
    }

    /// Puts back the state a replica had on disk: its confirmed store and its queue.
    mutating func restore(confirmed: ReplicaView, pending: [PendingWrite]) {
        self.confirmed = confirmed
        self.pending = pending
        rebase()
    }

    /// The first pending write the server has not answered.
    var nextToPush: PendingWrite? { pending.first { $0.confirmedSequence == 0 } }

    /// The view: the confirmed store, then each pending write decided anew on top.
    private mutating func rebase() {
        var view = confirmed
        var left: Set<String> = []
        var wrongTarget: [String: String] = [:]
        let queued = Set(pending.map(\.commandID))
        var generator = SplitMix64(seed: 0)  // specified commands draw nothing
        for write in pending {
            do {
                let decision = try decider.decide(
                    write.command, session: session, state: view.state, changes: view.changes, log: view,
                    timestamp: write.made, using: &generator)
                // Misdirected only once the named change left the queue without reaching the
                // view (refused); one merely left out of the view is still the server's to decide.
                if let named = write.revertsCommandID, !queued.contains(named), let now = view.commandID(revertedBy: decision.mark), now != named {
                    wrongTarget[write.commandID] = named
                    left.insert(write.commandID)
                    continue
                }
                try view.fold(
                    Change(sequence: view.head + 1, session: session, event: decision.event, mark: decision.mark), session: session,
                    commandID: write.commandID)
            } catch {
                left.insert(write.commandID)
            }
        }
        local = view
        shadowed = left
        misdirected = wrongTarget
        version += 1
    }

    /// `command` with everything the store would choose filled in from its event, so
    /// that the server records the ids, dates and colours the device showed.
    static func specified(_ command: Command, by event: Event) -> Command {
        switch (command, event) {
        case (.addChordset, .chordsetAdded(let chordset)):
            return .addChordset(AddChordset(
                id: chordset.id, title: chordset.title, creationDate: chordset.creationDate,
                chords: chordset.chords.map { ChordSpec(id: $0.id, position: $0.position, bpm: $0.bpm, color: $0.color) }))
        case (.setControlsChord(let set), .controlsChordSet(let chord?, _)):
            return .setControlsChord(SetControlsChord(id: chord.id, bpm: set.bpm, color: set.color))
        default:
            return command
        }
    }
}
