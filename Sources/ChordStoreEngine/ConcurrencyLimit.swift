import Synchronization

/// At most `limit` of some expensive work at once: callers take a slot or are refused.
/// Used for the work a client can start that holds a read snapshot and a core for long
/// (reads of the past, filtered counts, live queries).
public final class ConcurrencyLimit: Sendable {
    /// The most that may run at once.
    public let limit: Int
    private let running = Mutex(0)

    /// Creates a limit of `limit` (at least 1).
    public init(_ limit: Int) {
        self.limit = max(1, limit)
    }

    /// Runs `body` in a slot, or throws `refusal` if every slot is taken.
    public func run<T, E: Error>(orThrow refusal: @autoclosure () -> E, _ body: () throws(E) -> T) throws(E) -> T {
        guard enter() else { throw refusal() }
        defer { leave() }
        return try body()
    }

    /// Takes a slot if one is free; give it back with ``leave()``.
    public func enter() -> Bool {
        running.withLock { running in
            guard running < limit else { return false }
            running += 1
            return true
        }
    }

    /// Gives back a slot taken with ``enter()``.
    public func leave() { running.withLock { $0 -= 1 } }
}
