import ChordStoreDomain
import Foundation
import GRDB

/// Queued writes found damaged on the device (docs/DEVICES.md, "Damage on the device").
extension ReplicaStorage {
    /// A queued write that does not match its checksum or does not read.
    struct DamagedWrite: Sendable {
        let key: UInt64
        let bytes: [UInt8]
        /// What its bytes still read as, if anything.
        let decoded: PendingWrite?
    }

    /// The queue, in order: the writes whose checksum holds and that read, and the ones
    /// that are damaged (see ``setAside(_:session:now:)``).
    func queuedWrites() throws(ReplicaError) -> (writes: [PendingWrite], damaged: [DamagedWrite]) {
        try readQueue { db in
            var writes: [PendingWrite] = []
            var damaged: [DamagedWrite] = []
            let rows = try Row.fetchCursor(db, sql: "SELECT key, write, checksum FROM pending ORDER BY key")
            while let row = try rows.next() {
                let stored = try KeyedRow(row)
                let decoded = stored.bytes.flatMap { try? PendingWriteCodec.decode($0, key: stored.key) }
                if stored.isIntact, let decoded {
                    writes.append(decoded)
                } else {
                    damaged.append(DamagedWrite(key: stored.key, bytes: stored.bytes ?? [], decoded: decoded))
                }
            }
            return (writes, damaged)
        }
    }

    /// Takes damaged queued writes out of the queue, so that none is ever sent: one the
    /// server answered already (it has its own copy) just leaves; one whose bytes still
    /// read as a write becomes a rejected write (code `DATA_LOSS`, reason
    /// `DAMAGED_ON_DEVICE`), taken back from the view as any refused write; one that does
    /// not read is kept as it was in `unreadable`.
    func setAside(_ damaged: [DamagedWrite], session: String, now: Instant) throws(ReplicaError) -> [ReplicaDamage] {
        guard !damaged.isEmpty else { return [] }
        var report: [ReplicaDamage] = []
        try writeQueue { db in
            for write in damaged {
                try db.execute(sql: "DELETE FROM pending WHERE key = ?", arguments: [Int64(clamping: write.key)])
                if let decoded = write.decoded, decoded.confirmedSequence > 0 {
                    report.append(ReplicaDamage(
                        .writeAlreadyRecorded,
                        "queued write \(write.key) was damaged on the device after the server recorded it at sequence \(decoded.confirmedSequence): the server's copy comes with the next sync"))
                } else if let decoded = write.decoded {
                    let rejection = RejectedWrite(
                        write: decoded, code: .dataLoss, reason: .damagedOnDevice,
                        message: "queued write \(write.key) was damaged on the device (its checksum does not match); it is not sent (should an earlier send have reached the server unanswered, the server's copy comes with the next sync)", rejected: now)
                    try Self.putRejected(db, rejection, session: session)
                    report.append(ReplicaDamage(.writeTakenAside, "queued write \(write.key) was damaged on the device: taken aside as rejected, not sent"))
                } else {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO unreadable (key, write) VALUES (?, ?)", arguments: [Int64(clamping: write.key), Data(write.bytes)])
                    report.append(ReplicaDamage(
                        .writeUnreadable, "queued write \(write.key) was damaged on the device beyond reading: kept in the queue file's unreadable table, not sent"))
                }
            }
        }
        return report
    }
}
