import Synchronization

/// A continuation resumed by the first of several answers; the others are dropped
/// (``GroupCommitWriter/exclusive(answering:)``).
final class FirstAnswer<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, Never>?>

    init(_ continuation: CheckedContinuation<T, Never>) { self.continuation = Mutex(continuation) }

    /// Resumes the continuation with `value`, if nothing resumed it yet.
    func resume(_ value: T) {
        continuation.withLock { $0.take() }?.resume(returning: value)
    }
}
