@testable import ChordStoreEngine
import Foundation
import Synchronization
import Testing

/// The writer's batch of answers: wake-ups registered during it run once each, at its end,
/// on the thread that ran it.
@Suite("Answer batch")
struct AnswerBatchTests {
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

    @Test("a batch whose body throws still runs its wake-ups and ends; another thread never sees it")
    func throwsAndOtherThreads() throws {
        struct Failure: Error {}
        final class Receiver {}
        let receiver = Receiver()
        var woken = 0
        let elsewhere = Mutex<Bool?>(nil)
        #expect(throws: Failure.self) {
            try AnswerBatch.run {
                AnswerBatch.current?.atEnd(of: receiver) { woken += 1 }
                let thread = Thread { elsewhere.withLock { $0 = AnswerBatch.current != nil } }
                thread.start()
                while elsewhere.withLock({ $0 }) == nil { Thread.sleep(forTimeInterval: 0.001) }
                throw Failure()
            }
        }
        #expect(woken == 1)
        #expect(elsewhere.withLock { $0 } == false)
        #expect(AnswerBatch.current == nil)
    }

    @Test("Waiters.resume delivers inside a batch (a quorum's acknowledgement ends its writes together)")
    func waitersResumeInABatch() {
        let waiters = Waiters<UInt64, Bool>()
        let seen = Mutex<[Bool]>([])
        for goal: UInt64 in 1...3 {
            _ = waiters.register(for: goal, timeout: nil, otherwise: false, check: { _ in nil }) { _ in
                seen.withLock { $0.append(AnswerBatch.current != nil) }
            }
        }
        waiters.resume { $0 <= 2 ? true : nil }
        #expect(seen.withLock { $0 } == [true, true])
        waiters.resumeAll(with: false)
        #expect(seen.withLock { $0 } == [true, true, true])
        #expect(waiters.count == 0)
    }
}
