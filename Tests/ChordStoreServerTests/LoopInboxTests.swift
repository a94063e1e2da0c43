import ChordStoreEngine
@testable import ChordStoreServer
import NIOEmbedded
import Synchronization
import Testing

/// The inbox that hands answers to an event loop: one drain per burst, and inside the
/// writer's batch of answers, none before the batch ends.
@Suite("Loop inbox")
struct LoopInboxTests {
    @Test("answers posted inside a batch wait for its end, then run in order in one drain; outside a batch the first schedules it")
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

    @Test("a batch registers one wake-up per receiver, runs them in order, and a nested batch joins the outer one")
    func oneWakeUpPerReceiver() {
        final class Receiver {}
        let (first, second) = (Receiver(), Receiver())
        var woken: [String] = []
        AnswerBatch.run {
            AnswerBatch.current?.atEnd(of: first) { woken.append("first") }
            AnswerBatch.run {
                AnswerBatch.current?.atEnd(of: second) { woken.append("second") }
                AnswerBatch.current?.atEnd(of: first) { woken.append("first again") }
            }
            #expect(woken.isEmpty)
        }
        #expect(woken == ["first", "second"])
        #expect(AnswerBatch.current == nil)
    }
}
