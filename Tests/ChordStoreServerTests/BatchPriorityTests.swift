@testable import ChordStoreReplica
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A pull's batch runs below the app's threads (docs/DEVICES.md, "A SwiftUI view").
@Suite("A pull's batch priority")
struct BatchPriorityTests {
    #if os(Linux)
    @Test("on Linux a batch runs at a nice value 10 above the thread's, which is set back after it, even when it throws")
    func nicedForTheBatch() throws {
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        let before = getpriority(which, 0)
        let during = BatchPriority.lowered { getpriority(which, 0) }
        #expect(during == min(before + 10, 19))
        #expect(getpriority(which, 0) == before)
        struct Stop: Error {}
        #expect(throws: Stop.self) { try BatchPriority.lowered { () throws(Stop) in throw Stop() } }
        #expect(getpriority(which, 0) == before)
    }
    #endif
}
