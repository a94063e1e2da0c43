/// Waits for a counter to reach a sequence number (a quorum write waiting for its event
/// to be on a majority): a ``Waiters`` whose every wait has its sequence number as its
/// threshold, so that ``resume(through:)`` ends the waits a new value reaches without
/// looking at the others.
///
/// Its methods are not generic: a caller in another module runs the registry specialized
/// for these types here, not ``Waiters``' generic code (which, on a quorum leader's event
/// loops, spent more time on the types' metadata than on the waits; docs/PERFORMANCE.md).
public final class SequenceWaiters: Sendable {
    /// A wait registered with a closure: ``cancel(_:)`` ends it.
    public typealias Registration = Waiters<UInt64, Bool>.Registration

    private let waiters = Waiters<UInt64, Bool>()

    /// An empty registry.
    public init() {}

    /// Returns `true` once the wait for `sequence` is reached (checked now with `check`,
    /// then at each ``resume(through:)``), or `check`'s `false`; `false` when `timeout`
    /// passes or the task is cancelled. `check` runs under the registry's lock.
    public func wait(for sequence: UInt64, timeout: Duration?, check: (UInt64) -> Bool?) async -> Bool {
        await waiters.wait(for: sequence, threshold: sequence, timeout: timeout, otherwise: false, check: check)
    }

    /// Calls `body` once: at once with `check`'s outcome if it has one (and returns
    /// `nil`), else with `true` from the ``resume(through:)`` that reaches `sequence`, or
    /// with `false` when `timeout` passes or ``cancel(_:)`` or ``resumeAll(with:)`` ends it.
    /// `body` runs on whichever thread ends the wait: it must be quick.
    public func register(
        for sequence: UInt64, timeout: Duration?, check: (UInt64) -> Bool?, _ body: @escaping @Sendable (Bool) -> Void
    ) -> Registration? {
        waiters.register(for: sequence, threshold: sequence, timeout: timeout, otherwise: false, check: check, body)
    }

    /// Ends the registered wait with `false`, unless it has ended already.
    public func cancel(_ registration: Registration) {
        waiters.cancel(registration, with: false)
    }

    /// Ends, with `true`, every wait for a sequence number of at most `sequence`.
    public func resume(through sequence: UInt64) {
        waiters.resume(through: sequence, with: true)
    }

    /// Ends every wait with `outcome`.
    public func resumeAll(with outcome: Bool) {
        waiters.resumeAll(with: outcome)
    }

    /// How many waits are registered now.
    public var count: Int { waiters.count }
}
