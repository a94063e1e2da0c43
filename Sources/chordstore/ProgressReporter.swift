import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Prints `label: done/total events (pct%)` (or `MiB`, for bytes) on standard error,
/// rewriting one line at most ten times a second, when standard error is a terminal;
/// otherwise hands the same line to `log` (if given) at the first report before the end,
/// then at most once an interval and once more at the end, so that long work under a
/// service manager is not silent (work reported only at its end says nothing).
final class ProgressReporter: @unchecked Sendable {
    private let label: String
    private let bytes: Bool
    private let terminal: Bool
    private let log: (@Sendable (String) -> Void)?
    private let logInterval: TimeInterval
    private let now: @Sendable () -> Date
    private let lock = NSLock()
    private var lastPrint = Date.distantPast
    private var printed = false
    private var logged = false

    /// Reports `label`'s progress in events, or in bytes (shown in MiB) with `bytes`; off
    /// a terminal, through `log`, every `logInterval` seconds (5 unless a test says).
    init(
        label: String, bytes: Bool = false, terminal: Bool = isatty(STDERR_FILENO) == 1, logInterval: TimeInterval = 5,
        now: @escaping @Sendable () -> Date = { Date() }, log: (@Sendable (String) -> Void)? = nil
    ) {
        self.label = label
        self.bytes = bytes
        self.terminal = terminal
        self.logInterval = logInterval
        self.now = now
        self.log = log
    }

    /// Reports progress; safe from any thread.
    var report: @Sendable (UInt64, UInt64) -> Void {
        { [self] done, total in update(done, total) }
    }

    private func update(_ done: UInt64, _ total: UInt64) {
        guard terminal || log != nil else { return }
        lock.lock()
        defer { lock.unlock() }
        let now = now()
        if terminal {
            guard now.timeIntervalSince(lastPrint) >= 0.1 || done == total else { return }
            lastPrint = now
            FileHandle.standardError.write(Data("\r\(line(done, total))\u{1B}[K".utf8))
            printed = true
        } else if let log {
            // Work that reports before its end is announced at once (a start-up rebuild
            // reports its replay, then loads the views as long again without a word);
            // work reported only at its end (a catch-up) says nothing.
            let due = logged ? now.timeIntervalSince(lastPrint) >= logInterval || done == total : done < total
            guard due else { return }
            lastPrint = now
            logged = done != total
            log(line(done, total))
        }
    }

    private func line(_ done: UInt64, _ total: UInt64) -> String {
        let percent = total == 0 ? 100 : Int(Double(done) / Double(total) * 100)
        let amount = bytes ? "\(done >> 20)/\(total >> 20) MiB" : "\(done)/\(total) events"
        return "\(label): \(amount) (\(percent)%)"
    }

    /// Ends the progress line, if one was printed.
    func finish() {
        lock.lock()
        defer { lock.unlock() }
        if printed { FileHandle.standardError.write(Data("\n".utf8)) }
        printed = false
    }
}
