import Foundation
import Synchronization

/// Checks `condition` every 20 ms until it holds or `timeout` passes; returns whether it
/// held. For conditions no event announces (a server's counters, a child's memory).
public func eventually(timeout: Duration = .seconds(20), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(20))
    }
}

/// Flips one bit of `text` in `file`, in every copy of it (LMDB's copy-on-write leaves
/// older copies of pages in free pages); returns how many copies it changed.
@discardableResult
public func damage(_ text: String, in file: URL, atOffset offset: Int = 3) throws -> Int {
    var data = try Data(contentsOf: file)
    let needle = Data(text.utf8)
    var from = data.startIndex
    var flipped = 0
    while let range = data.range(of: needle, in: from..<data.endIndex) {
        data[range.lowerBound + offset] ^= 0x20
        from = range.upperBound
        flipped += 1
    }
    try data.write(to: file)
    return flipped
}

/// `body`'s result, or a ``RawClientError`` once `limit` passes first: a test that
/// waits for something the server must do bounds the wait, so a regression fails it
/// instead of hanging the suite. `body` is cancelled then, but not waited for (a wait on
/// another task's value does not end when cancelled).
public func within<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let outcome = FirstOutcome<T>()
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        outcome.set(continuation)
        let work = Task {
            do {
                outcome.resume(with: .success(try await body()))
            } catch {
                outcome.resume(with: .failure(error))
            }
        }
        Task {
            try? await Task.sleep(for: limit)
            if outcome.resume(with: .failure(RawClientError("nothing happened within \(limit)"))) { work.cancel() }
        }
    }
}

/// A continuation resumed by whichever outcome comes first.
private final class FirstOutcome<T: Sendable>: Sendable {
    private let continuation = Mutex<CheckedContinuation<T, any Error>?>(nil)

    func set(_ continuation: CheckedContinuation<T, any Error>) { self.continuation.withLock { $0 = continuation } }

    /// Resumes with `result` unless an outcome came first; whether it did.
    @discardableResult
    func resume(with result: Result<T, any Error>) -> Bool {
        guard let continuation = continuation.withLock({ $0.take() }) else { return false }
        continuation.resume(with: result)
        return true
    }
}
