internal import CLMDB

/// A named database (a B-tree) inside an ``Environment``. The handle stays valid for the
/// environment's lifetime once the transaction that opened it has committed.
public struct Database: Sendable, Hashable {
    let handle: MDB_dbi
    /// The database's name.
    public let name: String

    /// A handle that names no database: for a slot that must hold one but is never used
    /// (LMDB refuses it with `EINVAL`).
    public static let unopened = Database(handle: MDB_dbi.max, name: "(unopened)")
}

/// Statistics of one database.
public struct DatabaseStat: Sendable, Hashable {
    /// Number of key/value pairs.
    public var entries: Int
    /// Depth of the B-tree.
    public var depth: Int
    /// Pages in use (branch + leaf + overflow).
    public var pages: Int
}

/// Flags for ``Transaction/put(_:key:value:flags:)``.
public struct PutFlags: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The key sorts after every key present: a fast append (keys must be in memcmp order).
    public static let append = PutFlags(rawValue: UInt32(MDB_APPEND))
}
