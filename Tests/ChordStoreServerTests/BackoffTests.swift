import ChordStoreClient
import Testing

@Suite("Backoff")
struct BackoffTests {
    @Test("without jitter the waits double from the first, without a limit as long as asked")
    func doubling() {
        var backoff = Backoff(first: .milliseconds(50), limit: nil, jitter: 0)
        #expect((0..<6).map { _ in backoff.next() } == [50, 100, 200, 400, 800, 1_600].map { .milliseconds($0) })
        backoff.reset()
        #expect(backoff.next() == .milliseconds(50))
    }

    @Test("a limit caps the wait, and jitter only lengthens it, by less than its share")
    func limitAndJitter() {
        var backoff = Backoff(first: .milliseconds(100), limit: .seconds(1), jitter: 0.25)
        var base = Duration.milliseconds(100)
        for _ in 0..<10 {
            let wait = backoff.next()
            #expect(wait >= base && wait < base * 1.25)
            base = min(base * 2, .seconds(1))
        }
    }
}
