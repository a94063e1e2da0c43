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
