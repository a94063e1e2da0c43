@testable import ChordStoreServer
import Testing

/// The one page a stream may post to its event loop without waiting for it.
@Suite("Posted page")
struct PostedPageTests {
    @Test("a page is posted without waiting only while none posted before is unwritten: at most one is posted that way at a time")
    func onePageAtATime() {
        let posted = PostedPage()
        #expect(posted.take())
        #expect(!posted.take())
        #expect(!posted.take())
        posted.written()
        #expect(posted.take())
        #expect(!posted.take())
    }
}
