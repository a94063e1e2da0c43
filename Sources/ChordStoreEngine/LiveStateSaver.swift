/// The thread that saves the live state in the background (``LiveStateFile``) when its
/// ``LiveSaveSchedule`` says a save is due: the saved state is the checkpoint a start
/// loads, so a kill or a machine crash costs the next start the replay of only the events
/// after it.
///
/// The writer calls ``ScheduledThread/committed(_:)`` after each commit: a lock held for
/// a comparison, and a wake-up of the thread only when a save starts.
typealias LiveStateSaver = ScheduledThread<LiveSaveSchedule>

extension ScheduledThread where Schedule == LiveSaveSchedule {
    /// Starts the thread (`cs-live-save`). `last` is the state saved already (the file the
    /// store opened from), `nil` if none; `save` saves the state now, or returns `nil` if
    /// it could not (it reports its own failures).
    convenience init(last: LiveSaveSchedule.Saved?, least: UInt64, save: @escaping @Sendable () -> LiveSaveSchedule.Saved?) {
        self.init(name: "cs-live-save", schedule: LiveSaveSchedule(last: last, least: least), work: save)
    }

    /// Tells the saver the log's last committed sequence; wakes the thread if a save is due.
    func committed(_ sequence: UInt64) {
        update { $0.commit(sequence) }
    }

    /// Makes a save due now, or after the running one (the log was cut back to
    /// `sequence`: the state saved last may hold events it no longer has).
    func forget(at sequence: UInt64) {
        update { schedule in
            schedule.forget(at: sequence)
            return schedule.startIfDue()
        }
    }

    /// The log sequence of the state saved last, while the log holds it (see
    /// ``LiveSaveSchedule/lastSaved``).
    var lastSaved: UInt64? { read { $0.lastSaved } }

    /// Saves completed since the thread started (for tests).
    var saves: Int { read { $0.saves } }
}
