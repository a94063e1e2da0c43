package import Foundation

/// What a replica directory of format 1 (LMDB) holds (one LMDB environment, `data.mdb`, with
/// the databases `meta`, `log`, `pending` and `rejected`), read once to move it to
/// format 2 (SQLite). Records and queued writes are kept byte for byte.
///
/// Format 1 ran on Linux only, and reading it needs LMDB, which an app does not build: the
/// reader is in the module `ChordStoreReplicaFormat1` (Linux and macOS), whose
/// `Replica.Options.movingFormat1` sets ``Replica/Options/format1Reader``; `chordstore
/// replica` uses it.
package struct ReplicaFormat1: Sendable {
    /// Reads a format 1 directory (``ReplicaError/Code/damaged`` when it cannot).
    package typealias Reader = @Sendable (_ directory: URL) throws(ReplicaError) -> ReplicaFormat1

    /// The data file of a format 1 replica in `directory`.
    package static func dataFile(in directory: URL) -> URL { directory.appendingPathComponent("data.mdb") }

    /// The `meta` database: name to value bytes.
    package var meta: [String: [UInt8]] = [:]
    /// The copied events: store sequence and record bytes, in order.
    package var events: [(sequence: UInt64, record: [UInt8])] = []
    /// The queued writes: queue key and serialized write, in order.
    package var pending: [(key: UInt64, bytes: [UInt8])] = []
    /// The writes the server refused: queue key and serialized write, in order.
    package var rejected: [(key: UInt64, bytes: [UInt8])] = []

    /// An empty directory's content.
    package init() {}

    /// A number as format 1 stored it (8 bytes, big-endian).
    package static func number(_ bytes: some Collection<UInt8>) -> UInt64 {
        guard bytes.count == 8 else { return 0 }
        return bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// A number of `meta`, or `nil` if absent.
    func number(_ name: String) -> UInt64? { meta[name].map(Self.number) }

    /// A string of `meta`, or `nil` if absent.
    func string(_ name: String) -> String? { meta[name].map { String(decoding: $0, as: UTF8.self) } }
}
