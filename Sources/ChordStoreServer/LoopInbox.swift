import ChordStoreEngine
import NIOCore
import Synchronization

/// Work handed to one event loop from other threads, run there in one `execute` per
/// burst. The writer completes a whole batch of commands at once: posting each answer
/// through `execute` wakes the loop once per command (and the woken loop contends with
/// the writer for its task queue); through the inbox, the first answer of a burst
/// schedules one drain, and the others join it. Inside the writer's batch of answers
/// (``AnswerBatch``) the drain is scheduled when the batch ends: a loop that drained
/// the first answer before the second came would otherwise be woken again for each.
final class LoopInbox: Sendable {
    private struct Pending {
        var jobs: [@Sendable () -> Void] = []
        var scheduled = false
    }

    let loop: any EventLoop
    private let pending = Mutex(Pending())

    init(loop: any EventLoop) { self.loop = loop }

    /// Runs `job` on the loop, after the jobs posted before it.
    func post(_ job: @escaping @Sendable () -> Void) {
        let schedule = pending.withLock { pending -> Bool in
            pending.jobs.append(job)
            defer { pending.scheduled = true }
            return !pending.scheduled
        }
        guard schedule else { return }
        if let batch = AnswerBatch.current {
            batch.atEnd(of: self) { self.loop.execute { self.drain() } }
        } else {
            loop.execute { self.drain() }
        }
    }

    private func drain() {
        let jobs = pending.withLock { pending -> [@Sendable () -> Void] in
            defer {
                pending.jobs.removeAll(keepingCapacity: true)
                pending.scheduled = false
            }
            return pending.jobs
        }
        for job in jobs { job() }
    }
}
