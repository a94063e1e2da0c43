import NIOCore
import NIOPosix

/// A task executor on a thread of its own (one NIO event loop): the coordinator's work
/// (lease renewals, the watch, elections, every etcd call) runs there, so that requests
/// busy on Swift concurrency's few threads (a large query holds one for as long as it
/// reads) cannot delay a renewal past the lease.
final class LoopExecutor: TaskExecutor, @unchecked Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let loop: any EventLoop

    init() {
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        loop = group.next()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    /// Stops the thread (once nothing runs on it any more).
    func shutdown() async {
        try? await group.shutdownGracefully()
    }
}
