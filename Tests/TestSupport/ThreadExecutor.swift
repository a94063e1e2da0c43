import Foundation

/// A task executor with one thread of its own, which runs the jobs given to it in order.
///
/// The tests share one process and its cooperative pool, which has as many threads as the
/// machine has cores (two in CI). A test that folds, verifies or replays thousands of
/// events between two `await`s holds one of those threads for seconds; two such tests
/// hold the pool, and every other test waits, the servers the tests start in the process
/// included: their calls run out their deadlines (`DEADLINE_EXCEEDED`) with nothing
/// wrong but a starved pool. Such a test runs its body through ``onOwnThread(_:)``.
public final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var stopping = false

    /// Starts the thread (named `cs-test-own`, as perf shows it).
    public init() {
        Thread.detachNewThread { [self] in
            Thread.current.name = "cs-test-own"
            run()
        }
    }

    /// Queues `job` for the thread. Only the tasks of the body given to
    /// ``onOwnThread(_:)`` come here, all before its ``stop()``.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        precondition(!stopping || !jobs.isEmpty, "a job after the executor's thread ended")
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Ends the thread once the jobs given before are run.
    public func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Runs `body` on a thread of its own (a ``ThreadExecutor``), not on the cooperative
/// pool: for a test whose synchronous stretches last seconds. Its child tasks (a task
/// group's, `async let`) run there too, one at a time; a `Task {}` it starts runs on the
/// pool. Blocking calls still go through `offPool`.
public func onOwnThread<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
    let executor = ThreadExecutor()
    defer { executor.stop() }
    return try await withTaskExecutorPreference(executor, operation: body)
}
