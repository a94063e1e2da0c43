import ChordStoreDomain
import CSystemExtras
import Foundation
import Synchronization

/// The one writer: a dedicated thread that owns every write to the backend.
///
/// Group commit: commands that arrive while a commit is in flight queue up, and the next
/// turn takes all of them (up to `maxBatch`) into one transaction, so a durable commit's
/// fsync is paid once per batch instead of once per command.
final class GroupCommitWriter: Sendable {
    /// Called on the writer thread with a command's outcome: it must return quickly.
    typealias Completion = @Sendable (Result<CommittedEvent, ChordStoreError>) -> Void

    private enum Job: Sendable {
        case command(SubmittedCommand, Completion)
        case exclusive(@Sendable () -> Void)
    }

    private struct Queue {
        var jobs: [Job] = []
        var sleeping = false
        var closed = false
        /// While the writer gathers a batch: the queue length at which to wake it.
        var gatheringUntil: Int?
    }

    private let queue = Mutex(Queue())
    private let counters = Mutex(WriterStatistics())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let backend: any StorageBackend
    private let applier: BatchApplier
    private let maxBatch: Int
    private let maxQueued: Int
    private let maxCommitDelay: Duration
    private let seed: UInt64
    private let notifier: CommitNotifier
    private let metrics: EngineMetrics
    /// The epoch written into new records (raised by promotion or by a leader's).
    private let epoch: Atomic<UInt64>
    /// Whether commands are accepted (false on a follower: its log is the leader's copy).
    private let writable = Atomic(true)
    /// A coordinated leader's lease end: no command commits, and none is acknowledged,
    /// from then on.
    let deadline = WriteDeadline()

    init(
        backend: any StorageBackend, applier: BatchApplier, maxBatch: Int, maxQueued: Int,
        maxCommitDelay: Duration, seed: UInt64, notifier: CommitNotifier, metrics: EngineMetrics
    ) {
        self.notifier = notifier
        self.metrics = metrics
        self.backend = backend
        self.applier = applier
        self.maxBatch = max(1, maxBatch)
        self.maxQueued = max(1, maxQueued)
        self.maxCommitDelay = maxCommitDelay
        self.seed = seed
        self.epoch = Atomic(applier.epoch)
        let thread = Thread { [self] in
            Self.nameThisThread("cs-writer")
            run()
        }
        thread.start()
    }

    /// Queues `command` and waits for its commit (or its refusal).
    func submit(_ command: SubmittedCommand) async -> Result<CommittedEvent, ChordStoreError> {
        await withCheckedContinuation { continuation in
            submit(command) { continuation.resume(returning: $0) }
        }
    }

    /// Queues `command`; `completion` gets its commit or refusal, on the writer thread
    /// (or on this one, if the queue refuses it).
    func submit(_ command: SubmittedCommand, completion: @escaping Completion) {
        if let refusal = enqueue(.command(command, completion)) { completion(.failure(refusal)) }
    }

    /// Runs `work` on the writer thread between batches, with no commit in flight.
    func exclusive<T: Sendable>(_ work: @escaping @Sendable () -> Result<T, ChordStoreError>) async -> Result<T, ChordStoreError> {
        await exclusive(answering: { answer in answer(work()) })
    }

    /// Runs `work` alone on the writer thread, like ``exclusive(_:)``, but the caller
    /// resumes as soon as `work` calls `answer`, while `work` goes on (a follower
    /// acknowledges a batch its log holds while the views take it). The first answer
    /// counts; `work` that returns without one answers `internal`.
    func exclusive<T: Sendable>(
        answering work: @escaping @Sendable (_ answer: (Result<T, ChordStoreError>) -> Void) -> Void
    ) async -> Result<T, ChordStoreError> {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, ChordStoreError>, Never>) in
            let pending = FirstAnswer(continuation)
            let answer: @Sendable (Result<T, ChordStoreError>) -> Void = { pending.resume($0) }
            let job = Job.exclusive {
                work(answer)
                answer(.failure(ChordStoreError(.internal, "the writer's job ended without an answer")))
            }
            if let refusal = enqueue(job) { answer(.failure(refusal)) }
        }
    }

    /// The epoch new records get.
    var currentEpoch: UInt64 { epoch.load(ordering: .acquiring) }

    /// Sets the epoch new records get. Call it from an exclusive job (between batches).
    func setEpoch(_ value: UInt64) { epoch.store(value, ordering: .releasing) }

    /// Whether commands are accepted.
    var acceptsCommands: Bool {
        get { writable.load(ordering: .acquiring) }
        set { writable.store(newValue, ordering: .releasing) }
    }

    /// Why a commit would be refused now: a follower's gate, or a lapsed lease.
    var refusal: ChordStoreError? {
        if !writable.load(ordering: .acquiring) { return Self.readOnlyError }
        return deadline.hasPassed() ? Self.leaseLapsedError : nil
    }

    /// Commits and events so far.
    var statistics: WriterStatistics { counters.withLock { $0 } }

    /// Finishes every queued job, then stops the thread. Later submissions fail.
    func close() {
        let signal = queue.withLock { queue -> Bool in
            if queue.closed { return false }
            queue.closed = true
            defer { queue.sleeping = false }
            return queue.sleeping
        }
        if signal { wake.signal() }
        finished.wait()
        finished.signal()
    }

    private static let closedError = ChordStoreError(.unavailable, "the store is closed")
    /// The refusal of a command on a store that accepts none (a follower).
    static let readOnlyError = ChordStoreError.notLeader("this node accepts no writes now")

    /// The refusal of a command once a coordinated leader's lease has lapsed.
    static let leaseLapsedError = ChordStoreError.notLeader("this node's leader lease lapsed; no leader is known now; retry shortly")

    /// The answer to a command whose commit ended after the node stopped leading, or
    /// past its lease.
    static func lapsedDuringCommit(_ sequence: UInt64) -> ChordStoreError {
        ChordStoreError(
            .unavailable,
            "event \(sequence) is on this node's disk, but this node stopped leading (or its lease lapsed) before its commit ended, so it was not acknowledged: it may or may not survive the failover; retry with the same command id")
    }

    /// Queues `job`; returns why it was refused, if it was.
    private func enqueue(_ job: Job) -> ChordStoreError? {
        let (refusal, signal) = queue.withLock { queue -> (ChordStoreError?, Bool) in
            if queue.closed { return (Self.closedError, false) }
            if queue.jobs.count >= maxQueued {
                return (ChordStoreError(.resourceExhausted, "the write queue holds \(maxQueued) commands, its limit; retry later"), false)
            }
            queue.jobs.append(job)
            var signal = queue.sleeping
            queue.sleeping = false
            if let goal = queue.gatheringUntil, queue.jobs.count >= goal {
                queue.gatheringUntil = nil
                signal = true
            }
            return (nil, signal)
        }
        if signal { wake.signal() }
        return refusal
    }

    /// Names the calling thread as `ps -L`, `top -H`, `perf` and /proc/PID/task show it
    /// (tools/bench/compare sums the writer's CPU by it). Linux keeps 15 bytes. A thread
    /// inherits its creator's name: one the writer starts names itself too (the snapshot
    /// files' `cs-snapshot`), or its work would count as the writer's.
    static func nameThisThread(_ name: String) {
        #if os(Linux)
        cse_name_thread(name)
        #endif
    }

    private func run() {
        var generator = IncreasingIDs(SplitMix64(seed: seed))
        var lastBatch = 1
        while true {
            gatherSiblings(expecting: lastBatch)
            let (jobs, closed) = queue.withLock { queue -> ([Job], Bool) in
                if queue.jobs.isEmpty {
                    queue.sleeping = !queue.closed
                    return ([], queue.closed)
                }
                return (takeBatch(from: &queue.jobs), false)
            }
            if jobs.isEmpty {
                if closed { break }
                wake.wait()
                continue
            }
            if case .exclusive(let work) = jobs[0] {
                work()
                continue
            }
            var commands: [SubmittedCommand] = []
            var completions: [Completion] = []
            commands.reserveCapacity(jobs.count)
            completions.reserveCapacity(jobs.count)
            for case .command(let command, let completion) in jobs {
                commands.append(command)
                completions.append(completion)
            }
            lastBatch = commands.count
            if let refusal {
                AnswerBatch.run { for completion in completions { completion(.failure(refusal)) } }
                continue
            }
            var applier = self.applier
            applier.epoch = epoch.load(ordering: .acquiring)
            let started = ContinuousClock.now
            let results = backend.commit(commands, applier: applier, generator: &generator)
            let committed = results.count { if case .success = $0 { true } else { false } }
            if committed > 0 {
                metrics.committed(events: committed, in: ContinuousClock.now - started)
                counters.withLock {
                    $0.commits += 1
                    $0.events += UInt64(committed)
                }
            }
            if results.contains(where: { if case .success(let committed) = $0 { committed.recorded.event.isServerEvent } else { false } }) {
                notifier.serverChanged()
            }
            // Checked again after the fsync: a commit that ended after the node stopped
            // leading, or past its lease (the process was paused, say), is not
            // acknowledged; its events stay in the log.
            let lapsed = committed > 0 && refusal != nil
            // One batch of answers: an event loop that serves several of them is woken
            // once, after the last (AnswerBatch), not once for each.
            AnswerBatch.run {
                for (completion, result) in zip(completions, results) {
                    if lapsed, case .success(let event) = result {
                        completion(.failure(Self.lapsedDuringCommit(event.recorded.logSequence)))
                    } else {
                        completion(result)
                    }
                }
                let head = results.reduce(UInt64(0)) { head, result in
                    // The notifier counts in log positions (a store's own sequence is not one).
                    if case .success(let committed) = result { return max(head, committed.recorded.logSequence) }
                    return head
                }
                if head > 0 { notifier.published(head) }
            }
        }
        finished.signal()
    }

    /// Commit delay: when fewer commands wait than the last batch held, the callers of
    /// that batch are most likely still resubmitting (they were answered a moment ago).
    /// Waiting while the queue keeps growing, up to `maxCommitDelay`, lets them share the
    /// next fsync instead of splitting into a small commit and a large one. A lone caller
    /// (last batch of 1) never waits. The writer sleeps until the queue holds as many as
    /// the last batch (``enqueue(_:)`` wakes it then), or until no command arrived for
    /// ``quietGap``: the wait ends as soon as arrivals stop.
    private func gatherSiblings(expecting target: Int) {
        guard target > 1, maxCommitDelay > .zero else { return }
        let goal = min(target, maxBatch)
        let deadline = DispatchTime.now() + .nanoseconds(Int(maxCommitDelay / .nanoseconds(1)))
        var seen = 0
        defer { queue.withLock { $0.gatheringUntil = nil } }
        while true {
            let count = queue.withLock { queue -> Int in
                queue.gatheringUntil = goal
                return queue.jobs.count
            }
            guard count > 0, count < goal, count > seen, DispatchTime.now() < deadline else { return }
            seen = count
            _ = wake.wait(timeout: min(.now() + Self.quietGap, deadline))
        }
    }

    /// How long the writer waits for the next command of a batch it gathers.
    static let quietGap = DispatchTimeInterval.microseconds(100)

    /// The next batch: one exclusive job alone, or the leading run of commands.
    private func takeBatch(from jobs: inout [Job]) -> [Job] {
        if case .exclusive = jobs[0] { return [jobs.removeFirst()] }
        var end = 0
        while end < jobs.count, end < maxBatch, case .command = jobs[end] { end += 1 }
        let batch = Array(jobs[..<end])
        jobs.removeFirst(end)
        return batch
    }
}

/// Counters of the writer since the store was opened.
public struct WriterStatistics: Sendable, Hashable {
    /// Transactions that committed at least one event.
    public var commits: UInt64 = 0
    /// Events committed.
    public var events: UInt64 = 0
}
