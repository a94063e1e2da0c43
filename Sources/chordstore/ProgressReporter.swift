import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Prints `label: done/total events (pct%)` (or `MiB`, for bytes) on standard error,
/// rewriting one line at most ten times a second, and only when standard error is a
/// terminal.
final class ProgressReporter: @unchecked Sendable {
    private let label: String
    private let bytes: Bool
    private let enabled = isatty(STDERR_FILENO) == 1
    private let lock = NSLock()
    private var lastPrint = Date.distantPast
    private var printed = false

    /// Reports `label`'s progress in events, or in bytes (shown in MiB) with `bytes`.
    init(label: String, bytes: Bool = false) {
        self.label = label
        self.bytes = bytes
    }

    /// Reports progress; safe from any thread.
    var report: @Sendable (UInt64, UInt64) -> Void {
        { [self] done, total in update(done, total) }
    }

    private func update(_ done: UInt64, _ total: UInt64) {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        let now = Date()
        guard now.timeIntervalSince(lastPrint) >= 0.1 || done == total else { return }
        lastPrint = now
        let percent = total == 0 ? 100 : Int(Double(done) / Double(total) * 100)
        let amount = bytes ? "\(done >> 20)/\(total >> 20) MiB" : "\(done)/\(total) events"
        FileHandle.standardError.write(Data("\r\(label): \(amount) (\(percent)%)\u{1B}[K".utf8))
        printed = true
    }

    /// Ends the progress line, if one was printed.
    func finish() {
        lock.lock()
        defer { lock.unlock() }
        if printed { FileHandle.standardError.write(Data("\n".utf8)) }
        printed = false
    }
}
