import ChordStoreEngine
@testable import ChordStoreServer
import NIOEmbedded
import Synchronization
import Testing

/// The inbox that hands answers to an event loop: one drain per burst, and inside the
/// writer's batch of answers, none before the batch ends.
@Suite("Loop inbox")
struct LoopInboxTests {
    @Test("answers posted inside a batch wait for its end, then run in order; outside a batch the first schedules the drain")
    func batchDefersTheDrain() {
        let loop = EmbeddedEventLoop()
        let inbox = LoopInbox(loop: loop)
        let ran = Mutex<[Int]>([])
        AnswerBatch.run {
            for i in 0..<3 { inbox.post { ran.withLock { $0.append(i) } } }
            loop.run()  // a loop awake meanwhile finds nothing to run yet
            #expect(ran.withLock { $0 }.isEmpty)
        }
        loop.run()
        #expect(ran.withLock { $0 } == [0, 1, 2])

        // Outside a batch: scheduled at the first post, so a loop that runs in between
        // drains what came so far.
        inbox.post { ran.withLock { $0.append(3) } }
        loop.run()
        #expect(ran.withLock { $0 } == [0, 1, 2, 3])
    }
}
