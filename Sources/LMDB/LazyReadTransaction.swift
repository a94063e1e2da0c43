#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A read transaction of an ``Environment`` that begins at its first use, inside
/// ``Environment/withLazyReadTransaction(_:)``, and ends with that call. It sees the
/// environment as of its first use, not as of the call's start.
public final class LazyReadTransaction {
    private let environment: Environment
    private var begun: Transaction?
    /// The call that gave this object returned: no transaction may begin any more (its
    /// shared lock would never be released).
    private var ended = false

    init(environment: Environment) {
        self.environment = environment
    }

    /// The transaction, begun now if this is its first use. Valid until the end of the
    /// ``Environment/withLazyReadTransaction(_:)`` call that gave this object; use it on
    /// that call's thread only.
    public func transaction() throws(LMDBError) -> Transaction {
        if let begun { return begun }
        if ended { throw LMDBError(code: EINVAL, operation: "a lazy read transaction used after its call returned") }
        environment.resizeLock.lockShared()
        do {
            let txn = try environment.beginRead()
            begun = txn
            return txn
        } catch {
            environment.resizeLock.unlockShared()
            throw error
        }
    }

    /// Whether the transaction was begun.
    public var isBegun: Bool { begun != nil }

    /// Ends the transaction if it was begun.
    func end() {
        ended = true
        guard let txn = begun else { return }
        begun = nil
        environment.endRead(txn)
        environment.resizeLock.unlockShared()
    }
}
