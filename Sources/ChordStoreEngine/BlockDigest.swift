import ChordStoreRecords
/// The checksum of a backup's file: XXH64 over its consecutive 1 MiB blocks, each block's
/// hash seeded with the one before (0 for the first), the last block possibly shorter. It
/// depends only on the bytes, not on how they were cut into messages, so the sender and
/// the receiver (and a restore reading the file back) compute the same value.
public struct BlockDigest: Sendable {
    /// The block size the chain is cut at.
    public static let blockSize = 1 << 20

    private var pending: [UInt8] = []
    private var chained: UInt64 = 0
    /// Bytes taken so far.
    public private(set) var count: UInt64 = 0

    /// An empty digest.
    public init() {
        pending.reserveCapacity(Self.blockSize)
    }

    /// Takes the file's next bytes.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        count += UInt64(bytes.count)
        var rest = bytes[...]
        while !rest.isEmpty {
            if pending.isEmpty, rest.count >= Self.blockSize {
                chained = XXHash64.hash(UnsafeRawBufferPointer(rebasing: rest.prefix(Self.blockSize)), seed: chained)
                rest = rest.dropFirst(Self.blockSize)
                continue
            }
            let take = min(Self.blockSize - pending.count, rest.count)
            pending.append(contentsOf: rest.prefix(take))
            rest = rest.dropFirst(take)
            if pending.count == Self.blockSize {
                chained = pending.withUnsafeBytes { XXHash64.hash($0, seed: chained) }
                pending.removeAll(keepingCapacity: true)
            }
        }
    }

    /// Takes the file's next bytes.
    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The digest of everything taken.
    public var value: UInt64 {
        pending.isEmpty ? chained : pending.withUnsafeBytes { XXHash64.hash($0, seed: chained) }
    }
}
