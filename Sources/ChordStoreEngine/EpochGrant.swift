import ChordStoreRecords

/// An epoch a `Fence` granted to a leader: each epoch goes to one leader, and a node
/// keeps the grant with its epoch, so that it refuses the epoch to another leader after
/// a restart as well.
package struct EpochGrant: Sendable, Hashable {
    /// The epoch granted.
    package var epoch: UInt64
    /// The leader's advertised `HOST:PORT`.
    package var leader: String

    /// The grant of `epoch` to the leader at `leader`.
    package init(epoch: UInt64, leader: String) {
        self.epoch = epoch
        self.leader = leader
    }

    /// As stored: the epoch, 8 bytes big-endian, then the leader's address in UTF-8.
    package var bytes: [UInt8] { StoreKeys.sequence(epoch) + Array(leader.utf8) }

    /// Reads what ``bytes`` wrote; `nil` for anything shorter than an epoch and an address,
    /// or an address that is not UTF-8.
    package init?(bytes: [UInt8]) {
        guard bytes.count > 8, let leader = String(validating: bytes[8...], as: UTF8.self),
              let epoch = bytes.withUnsafeBytes({ try? StoreKeys.sequence(UnsafeRawBufferPointer(rebasing: $0[..<8])) })
        else { return nil }
        self.init(epoch: epoch, leader: leader)
    }
}
