import ChordStoreDomain
import ChordStoreRecords

/// Where the feed's checksum chain stands: the whole-log position and checksum of the last
/// record copied. Each record the feed sends with its chain seed is checked as the server
/// checks its log: its checksum must chain to the seed, and a record that directly follows
/// the last one in the whole log must have that record's checksum as its seed.
struct FeedChain: Sendable, Hashable {
    var logSequence: UInt64
    var checksum: UInt64

    /// The chain after `record` (a stored record), or `nil` if it ends with no checksum.
    init?(_ record: [UInt8]) {
        guard let checksum = record.withUnsafeBytes({ RecordCodec.storedChecksum($0) }),
              let recorded = try? record.withUnsafeBytes({ raw throws(ChordStoreError) in try RecordCodec.decodeChecked(raw) })
        else { return nil }
        self.init(logSequence: recorded.logSequence, checksum: checksum)
    }

    init(logSequence: UInt64, checksum: UInt64) {
        self.logSequence = logSequence
        self.checksum = checksum
    }

    /// Checks `record` (decoded as `recorded`) against its `seed` and the chain so far,
    /// then moves the chain past it. A record without a seed (an older server) moves the
    /// chain without a check of its own.
    static func check(_ record: [UInt8], recorded: RecordedEvent, seed: UInt64?, after chain: inout FeedChain?) throws(ReplicaError) {
        let checksum: UInt64
        do {
            if let seed {
                checksum = try record.withUnsafeBytes { raw throws(ChordStoreError) in
                    try RecordCodec.verify(raw, sequence: recorded.logSequence, previousChecksum: seed)
                }
            } else {
                guard let stored = record.withUnsafeBytes({ RecordCodec.storedChecksum($0) }) else {
                    throw ChordStoreError(.dataLoss, "event \(recorded.sequence) of the feed does not end with its checksum")
                }
                checksum = stored
            }
        } catch {
            throw ReplicaError(.protocolError, "the feed sent event \(recorded.sequence) damaged (nothing of it was stored): \((error as? ChordStoreError)?.message ?? "\(error)")")
        }
        if let seed, let previous = chain, recorded.logSequence == previous.logSequence + 1, seed != previous.checksum {
            throw ReplicaError(
                .protocolError,
                "the feed's event \(recorded.sequence) does not chain to the event before it (seed \(seed), the last copied record's checksum \(previous.checksum)): nothing of it was stored")
        }
        chain = FeedChain(logSequence: recorded.logSequence, checksum: checksum)
    }
}
