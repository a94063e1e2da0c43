public import ChordStoreDomain

/// A position in a log: a record's sequence number, the epoch that wrote it and its
/// checksum. Because each checksum chains to the one before it, two logs with the same
/// checksum at the same sequence number hold the same records up to there.
public struct LogPosition: Sendable, Hashable, CustomStringConvertible {
    /// The record's sequence number (0: before the first record).
    public var sequence: UInt64
    /// The leadership epoch that wrote the record (0 before the first record).
    public var epoch: UInt64
    /// The record's hash-chain checksum (0 before the first record).
    public var checksum: UInt64

    /// Creates a position.
    public init(sequence: UInt64, epoch: UInt64, checksum: UInt64) {
        self.sequence = sequence
        self.epoch = epoch
        self.checksum = checksum
    }

    /// The position before the first record.
    public static let start = LogPosition(sequence: 0, epoch: 0, checksum: 0)

    /// The largest epoch a store takes or accepts: `Int64.max`, so that an epoch taken
    /// from a coordinator's revisions (etcd's are 64-bit signed) fits, and a promotion's
    /// next epoch is always a number. Larger ones are refused where they arrive.
    public static let maxEpoch = UInt64(Int64.max)
    /// Refuses, with `invalidArgument`, an epoch above ``maxEpoch``.
    public static func checkEpoch(_ epoch: UInt64) throws(ChordStoreError) {
        guard epoch <= maxEpoch else {
            throw ChordStoreError(.invalidArgument, "epoch \(epoch) is above the largest possible epoch, \(maxEpoch)")
        }
    }

    /// The largest sequence number a log holds: a record numbered beyond it is damaged.
    public static let maxSequence = UInt64(Int64.max)

    public var description: String {
        "event \(sequence) (epoch \(epoch), checksum \(RecordCodec.hex(checksum)))"
    }
}
