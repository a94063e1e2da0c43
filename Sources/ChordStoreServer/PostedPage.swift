import Synchronization

/// The one page a ``StreamWriter`` may have posted to its event loop without waiting for it.
final class PostedPage: Sendable {
    private let pending = Atomic(false)

    /// Claims the place of the page posted without waiting: false while one is unwritten.
    func take() -> Bool {
        pending.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }

    /// The posted page was written (or dropped): the place is free.
    func written() {
        pending.store(false, ordering: .releasing)
    }
}
