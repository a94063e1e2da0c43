/// The meta page a commit wrote (liblmdb 0.9's data format 1, 64-bit): its transaction
/// id, the roots of its trees and its last page. Written back over an environment's two
/// meta pages, it makes the environment that commit's state again.
public struct CommitMeta: Sendable, Hashable {
    /// The transaction id of the commit.
    public let transactionID: UInt64
    /// The environment's page size.
    public let pageSize: Int
    /// The last page the commit's state uses: the data file must hold it.
    public let lastPage: UInt64
    /// The meta page's first ``length`` bytes: the page header and the meta record.
    public let bytes: [UInt8]

    /// Bytes kept of a meta page: a 16-byte page header and liblmdb's 136-byte `MDB_meta`.
    public static let length = 152
    static let headerLength = 16
    static let magic: UInt32 = 0xBEEF_C0DE
    static let dataVersion: UInt32 = 1

    /// Reads a meta page's first ``length`` bytes; `nil` unless they are one of liblmdb
    /// 0.9's data format on a 64-bit little-endian machine, for pages of `pageSize` bytes.
    public init?(bytes: [UInt8], pageSize: Int) {
        guard bytes.count == Self.length, MemoryLayout<Int>.size == 8, 1.littleEndian == 1 else { return nil }
        func integer<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
            bytes.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
        }
        // MDB_meta: magic 4, version 4, address 8, map size 8, two MDB_db of 48 (the
        // first's leading 4 bytes hold the page size), last page 8, transaction id 8.
        guard integer(16, UInt32.self) == Self.magic, integer(20, UInt32.self) == Self.dataVersion,
            Int(integer(40, UInt32.self)) == pageSize, pageSize >= 512
        else { return nil }
        self.bytes = bytes
        self.pageSize = pageSize
        lastPage = integer(136, UInt64.self)
        transactionID = integer(144, UInt64.self)
    }
}
