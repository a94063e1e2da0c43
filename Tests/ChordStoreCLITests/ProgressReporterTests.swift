@testable import chordstore
import Foundation
import Synchronization
import Testing

@Suite("Progress off a terminal")
struct ProgressReporterTests {
    /// A clock the test moves, and the lines the reporter logged.
    private final class Fixture: Sendable {
        let clock = Mutex(Date(timeIntervalSince1970: 0))
        let lines = Mutex<[String]>([])
        func advance(_ seconds: TimeInterval) { clock.withLock { $0 += seconds } }

        func reporter(terminal: Bool = false) -> ProgressReporter {
            ProgressReporter(
                label: "rebuilding the views", terminal: terminal, logInterval: 5, now: { self.clock.withLock { $0 } },
                log: { line in self.lines.withLock { $0.append(line) } })
        }
    }

    @Test("work reported before its end is logged at its first report, then at most once an interval, and at its end")
    func longWorkIsLogged() {
        let fixture = Fixture()
        let report = fixture.reporter().report
        report(100, 1_000)
        fixture.advance(4)
        report(300, 1_000)
        fixture.advance(1.5)
        report(400, 1_000)
        fixture.advance(1)
        report(500, 1_000)
        fixture.advance(60)  // a long silent part (the load after the replay)
        report(1_000, 1_000)
        #expect(fixture.lines.withLock { $0 } == [
            "rebuilding the views: 100/1000 events (10%)",
            "rebuilding the views: 400/1000 events (40%)",
            "rebuilding the views: 1000/1000 events (100%)",
        ])
    }

    @Test("work reported only at its end (a catch-up) logs nothing, and on a terminal nothing goes to the log")
    func shortWorkIsQuiet() {
        let fixture = Fixture()
        let report = fixture.reporter().report
        fixture.advance(1)
        report(2, 2)
        let onTerminal = Fixture()
        let terminal = onTerminal.reporter(terminal: true)
        onTerminal.advance(60)
        // Drawn on standard error instead; `finish` ends the line.
        terminal.report(5, 10)
        terminal.finish()
        #expect(fixture.lines.withLock { $0 }.isEmpty)
        #expect(onTerminal.lines.withLock { $0 }.isEmpty)
    }
}
