@testable import ChordStoreServer
import Testing

/// The one page a stream may post to its event loop without waiting for it.
@Suite("Posted page")
struct PostedPageTests {
    @Test("a page is posted without waiting only while none posted before is unwritten: at most one waits in the loop's queue")
    func onePageAtATime() {
        let posted = PostedPage()
        #expect(posted.take())
        #expect(!posted.take())
        #expect(!posted.take())
        posted.written()
        #expect(posted.take())
        posted.written()
        posted.written()  // a second report frees nothing more
        #expect(posted.take())
        #expect(!posted.take())
    }

    @Test("of threads racing for the place, one wins until the page is written")
    func oneWinner() async {
        let posted = PostedPage()
        let winners = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<16 { group.addTask { posted.take() } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(winners == 1)
    }
}
