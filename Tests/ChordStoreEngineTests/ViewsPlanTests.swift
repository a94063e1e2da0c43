import ChordStoreDomain
@testable import ChordStoreEngine
import Testing

/// What a store's views need when it opens, for every case of what they record.
@Suite("Views plan")
struct ViewsPlanTests {
    private func head(_ sequence: UInt64, checksum: UInt64 = 7) -> LogHead {
        LogHead(sequence: sequence, checksum: checksum, timestamp: Instant(microsecondsSince1970: 0))
    }

    private func plan(layout: Bool = true, applied: LogHead, log: UInt64, checksumAtApplied: UInt64? = 7) -> ViewsPlan {
        ViewsPlan(currentLayout: layout, applied: applied, logHead: head(log), logChecksumAtApplied: checksumAtApplied, maxCatchUp: 100)
    }

    @Test("in step, a few events behind, far behind, of another layout, of another log, ahead of the log")
    func cases() {
        #expect(plan(applied: head(50), log: 50) == .current)
        #expect(plan(applied: .empty, log: 0, checksumAtApplied: nil) == .current)
        #expect(plan(applied: head(40), log: 50) == .catchUp)
        #expect(plan(applied: .empty, log: 100, checksumAtApplied: nil) == .catchUp)
        #expect(plan(applied: head(40), log: 500) == .rebuild(reusable: true))
        #expect(plan(layout: false, applied: head(50), log: 50) == .rebuild(reusable: false))
        #expect(plan(applied: head(40), log: 50, checksumAtApplied: 8) == .rebuild(reusable: false))
        #expect(plan(applied: head(40), log: 50, checksumAtApplied: nil) == .rebuild(reusable: false))
        #expect(plan(applied: head(60), log: 50) == .rebuild(reusable: false))
        #expect(ViewsPlan.catchUp.servesReads && ViewsPlan.rebuild(reusable: true).servesReads)
        #expect(!ViewsPlan.rebuild(reusable: false).servesReads)
    }
}
