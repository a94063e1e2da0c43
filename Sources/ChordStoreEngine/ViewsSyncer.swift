/// The thread that keeps the views' restore point (``ViewsRestorePoint``) close behind
/// their commits, on the ``RestorePointSchedule``: woken by commits
/// (``ScheduledThread/note(_:)``), asleep while idle.
typealias ViewsSyncer = ScheduledThread<RestorePointSchedule>

extension ScheduledThread where Schedule == RestorePointSchedule {
    /// Starts the thread (`cs-views-sync`). `take` takes a restore point and returns the
    /// last event it covers, or `nil` if it took none (it failed, or none may be taken now).
    convenience init(interval: Duration, events: UInt64, take: @escaping @Sendable () -> UInt64?) {
        self.init(name: "cs-views-sync", schedule: RestorePointSchedule(interval: interval, events: events, now: .now), work: take)
    }

    /// Tells the thread that the views now hold events up to `sequence`.
    func note(_ sequence: UInt64) {
        update { $0.note(sequence) }
    }
}
