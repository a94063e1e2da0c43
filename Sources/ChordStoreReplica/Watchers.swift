/// The continuations a replica wakes: status streams, notice streams and the live
/// queries' change signals, by registration id.
struct Watchers: Sendable {
    var statuses: [UInt64: AsyncStream<SyncStatus>.Continuation] = [:]
    var notices: [UInt64: AsyncStream<ReplicaNotice>.Continuation] = [:]
    var changes: [UInt64: AsyncStream<Void>.Continuation] = [:]
    var nextID: UInt64 = 0

    mutating func newID() -> UInt64 {
        nextID += 1
        return nextID
    }

    func finishAll() {
        for continuation in statuses.values { continuation.finish() }
        for continuation in notices.values { continuation.finish() }
        for continuation in changes.values { continuation.finish() }
    }
}
