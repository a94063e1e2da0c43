@testable import chordstore_check
import Testing

/// The checker's verdicts on crafted histories: each anomaly is found, and a clean
/// history has none.
@Suite("chordstore-check analysis")
struct CheckAnalysisTests {
    typealias Attempt = CheckAnalysis.Attempt

    @Test("a clean history, with an unacknowledged write applied or not, has no anomaly")
    func clean() {
        let attempts = [
            Attempt(client: 0, index: 0, title: "a0", acked: 1), Attempt(client: 0, index: 1, title: "a1", acked: nil),
            Attempt(client: 1, index: 0, title: "b0", acked: 3), Attempt(client: 1, index: 1, title: "b1", acked: nil),
        ]
        let analysis = CheckAnalysis.analyze(attempts: attempts, log: [(1, "a0"), (2, "a1"), (3, "b0")])
        #expect(analysis.isClean)
    }

    @Test("lost, duplicated, unexpected, misplaced and out-of-order writes are each reported")
    func anomalies() {
        let attempts = [
            Attempt(client: 0, index: 0, title: "a0", acked: 1),
            Attempt(client: 0, index: 1, title: "a1", acked: 2),
            Attempt(client: 0, index: 2, title: "a2", acked: 3),
            Attempt(client: 1, index: 0, title: "b0", acked: 4),
        ]
        let log: [(sequence: UInt64, title: String)] = [(1, "a0"), (2, "a2"), (3, "a1"), (5, "zz"), (6, "a0")]
        let analysis = CheckAnalysis.analyze(attempts: attempts, log: log)
        #expect(analysis.lost == ["b0"])
        #expect(analysis.duplicated == ["a0"])
        #expect(analysis.unexpected == ["zz"])
        #expect(analysis.misplaced == ["a1", "a2"])
        #expect(analysis.outOfOrder == ["a2"])
        #expect(!analysis.isClean)
    }

    @Test("faults parse as AT:ACTION:NODE")
    func faults() throws {
        #expect(try Fault(parsing: "2000:kill:n3") == Fault(parsing: "2000:kill:n3"))
        #expect(try Fault(parsing: "5:promote:best").action == .promote)
        #expect(throws: CheckFailure.self) { try Fault(parsing: "x:kill:n1") }
        #expect(throws: CheckFailure.self) { try Fault(parsing: "1:explode:n1") }
    }
}

/// The failover check's verdicts on crafted histories: failover times, and two leaders
/// taking writes at once.
@Suite("chordstore-check failover analysis")
struct FailoverAnalysisTests {
    typealias Ack = FailoverAnalysis.Ack

    @Test("the failover time runs from the fault to the first acknowledgement of a newer epoch")
    func failoverTime() {
        let acks = [
            Ack(epoch: 3, committedMicros: 100, ackedMillis: 900), Ack(epoch: 3, committedMicros: 200, ackedMillis: 1_100),
            Ack(epoch: 4, committedMicros: 900, ackedMillis: 3_400), Ack(epoch: 4, committedMicros: 950, ackedMillis: 3_500),
        ]
        #expect(FailoverAnalysis.failoverMillis(faultMillis: 1_000, epochBefore: 3, acks: acks) == 2_400)
        #expect(FailoverAnalysis.failoverMillis(faultMillis: 1_000, epochBefore: 4, acks: acks) == nil)
        #expect(FailoverAnalysis.failoverMillis(faultMillis: 3_450, epochBefore: 3, acks: acks) == 50)
    }

    @Test("epochs whose acknowledged commits interleave in time are split brains; epochs one after the other are not")
    func splitBrain() {
        let clean = [
            Ack(epoch: 3, committedMicros: 100, ackedMillis: 1), Ack(epoch: 3, committedMicros: 500, ackedMillis: 2),
            Ack(epoch: 5, committedMicros: 600, ackedMillis: 3), Ack(epoch: 4, committedMicros: 550, ackedMillis: 4),
        ]
        #expect(FailoverAnalysis.splitBrains(clean).isEmpty)
        // An old leader acknowledged a write it committed after the new leader's first.
        let overlapping = clean + [Ack(epoch: 3, committedMicros: 700, ackedMillis: 5)]
        #expect(FailoverAnalysis.splitBrains(overlapping) == [
            FailoverAnalysis.SplitBrain(older: 3, newer: 4, overlapMicros: 150),
            FailoverAnalysis.SplitBrain(older: 3, newer: 5, overlapMicros: 100),
        ])
    }

    @Test("median and largest; the longest gap between acknowledgements counts the window's edges")
    func figures() {
        #expect(FailoverAnalysis.medianAndMax([]) == nil)
        #expect(FailoverAnalysis.medianAndMax([3, 1, 2])! == (2, 3))
        #expect(FailoverAnalysis.medianAndMax([4, 1, 2, 3])! == (2.5, 4))
        let acks = [Ack(epoch: 1, committedMicros: 0, ackedMillis: 10), Ack(epoch: 1, committedMicros: 0, ackedMillis: 40)]
        #expect(FailoverRun.longestGap(acks, from: 0, to: 100) == 60)
        #expect(FailoverRun.longestGap([], from: 0, to: 100) == 100)
    }
}
