internal import CLMDB
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An error returned by liblmdb: its return code, its own message, and what we were doing.
public struct LMDBError: Error, Sendable, Hashable, CustomStringConvertible {
    /// liblmdb's return code (`MDB_*` or an `errno` value).
    public var code: Int32
    /// liblmdb's `mdb_strerror` text for `code`.
    public var message: String
    /// The operation that failed, for example `mdb_put(log)`.
    public var operation: String

    /// Creates an error from a return code.
    public init(code: Int32, operation: String) {
        self.code = code
        self.message = String(cString: mdb_strerror(code))
        self.operation = operation
    }

    /// The map is full: grow it with ``Environment/setMapSize(_:)`` and retry.
    public var isMapFull: Bool { code == MDB_MAP_FULL }
    /// No such key or database (`MDB_NOTFOUND`).
    public var isNotFound: Bool { code == MDB_NOTFOUND }
    /// The disk (or the user's quota) has no room for what was written: a normal
    /// condition to report, after which the environment stays usable.
    public var isDiskFull: Bool { code == ENOSPC || code == EDQUOT }
    /// The key was already present (an out-of-order `MDB_APPEND`).
    public var isKeyExists: Bool { code == MDB_KEYEXIST }

    public var description: String { "\(operation): \(message) (\(code))" }
}

/// Turns a liblmdb return code into a thrown ``LMDBError``.
@inline(__always)
func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws(LMDBError) {
    if rc != MDB_SUCCESS { throw LMDBError(code: rc, operation: operation()) }
}
