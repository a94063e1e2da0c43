/// The thread that keeps the live state under its memory bound
/// (``ChordStore/Options/maxStateMemory``) when its ``ResidencySchedule`` says so: it puts
/// back in memory the stores readers folded from the log, then evicts the stores used
/// least recently while the state is over the bound (``ResidencyPlan``).
///
/// The writer calls ``ScheduledThread/noteChange()`` after each commit: a lock held for
/// an assignment, and a wake-up of the thread only when it sleeps with nothing due.
typealias StateEvictor = ScheduledThread<ResidencySchedule>

extension ScheduledThread where Schedule == ResidencySchedule {
    /// Starts the thread (`cs-evict`); `turn` does one turn.
    convenience init(interval: Duration = .milliseconds(20), turn: @escaping @Sendable () -> Void) {
        self.init(name: "cs-evict", schedule: ResidencySchedule(interval: interval), work: turn)
    }

    /// Something may have changed the state's size (a commit, a reader's load): a turn is due.
    func noteChange() {
        update { $0.note() }
    }

    /// Turns completed (for tests).
    var turns: Int { read { $0.turns } }
}
