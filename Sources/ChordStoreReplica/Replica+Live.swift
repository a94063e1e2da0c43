public import ChordStoreDomain
import ChordStoreRecords
import Foundation
import Synchronization

extension Replica {
    /// The sync's status now.
    public var status: SyncStatus { publishedStatus.withLock { $0 } }

    /// The sync's status as it changes: the current one first, then each change (a
    /// consumer that falls behind gets the latest).
    public func statusUpdates() -> AsyncStream<SyncStatus> {
        let (stream, continuation) = AsyncStream<SyncStatus>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = core.withLock { core -> UInt64? in
            guard !core.closed else { return nil }
            let id = core.watchers.newID()
            core.watchers.statuses[id] = continuation
            continuation.yield(Self.status(of: core))
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in self?.core.withLock { _ = $0.watchers.statuses.removeValue(forKey: id) } }
        return stream
    }

    /// What happens to the device's writes from now on: confirmations, refusals (with
    /// the server's reason), resyncs. Keeps the last 1,024 undelivered notices.
    public func notices() -> AsyncStream<ReplicaNotice> {
        let (stream, continuation) = AsyncStream<ReplicaNotice>.makeStream(bufferingPolicy: .bufferingNewest(1_024))
        let id = core.withLock { core -> UInt64? in
            guard !core.closed else { return nil }
            let id = core.watchers.newID()
            core.watchers.notices[id] = continuation
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in self?.core.withLock { _ = $0.watchers.notices.removeValue(forKey: id) } }
        return stream
    }

    /// A live query on the device's view: the result first, then the deltas after each
    /// local write or synced event that changes it (bursts are folded into one message).
    /// The window holds at most ``Options/maxLiveQuerySize`` chordsets; `cursor` is
    /// ignored. Ends when the replica closes or the consumer stops.
    public func watch(_ query: ChordsetQuery) -> AsyncStream<ReplicaQueryUpdate> {
        var query = query
        query.cursor = nil
        query.limit = min(max(query.limit, 1), options.maxLiveQuerySize)
        let (signals, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = core.withLock { core -> UInt64? in
            guard !core.closed else { return nil }
            let id = core.watchers.newID()
            core.watchers.changes[id] = signal
            return id
        }
        signal.yield()
        if id == nil { signal.finish() }
        let (updates, continuation) = AsyncStream<ReplicaQueryUpdate>.makeStream(bufferingPolicy: .unbounded)
        let task = Task { [query] in
            var previous: [Chordset]?
            for await _ in signals {
                guard let page = try? self.chordsets(query) else { continue }
                let pending = self.readState().pending.count
                let update: ReplicaQueryUpdate
                if let before = previous {
                    let deltas = ListDelta.changes(from: before, to: page.chordsets)
                    if deltas.isEmpty { continue }
                    update = ReplicaQueryUpdate(
                        isInitial: false, chordsets: page.chordsets, deltas: deltas, lastSequence: page.sequence, pending: pending)
                } else {
                    update = ReplicaQueryUpdate(isInitial: true, chordsets: page.chordsets, deltas: [], lastSequence: page.sequence, pending: pending)
                }
                if let hold = self.beforeLiveUpdate.withLock({ $0 }) { await hold() }
                continuation.yield(update)
                previous = page.chordsets
            }
            continuation.finish()
        }
        continuation.onTermination = { [weak self] _ in
            task.cancel()
            signal.finish()
            if let id { self?.core.withLock { _ = $0.watchers.changes.removeValue(forKey: id) } }
        }
        return updates
    }

    /// Publishes the status after a change of the view, then wakes the live queries.
    func changed() {
        publishStatus()
        let signals = core.withLock { Array($0.watchers.changes.values) }
        for signal in signals { signal.yield() }
    }

    /// Publishes the status for reads and sends it to its streams if it changed. Called
    /// after every change of the model or the link.
    func publishStatus() {
        core.withLock { core in
            let status = Self.status(of: core)
            publishedStatus.withLock { $0 = status }
            guard status != core.lastStatus else { return }
            core.lastStatus = status
            for continuation in core.watchers.statuses.values { continuation.yield(status) }
        }
    }

    /// Sends `notices` to their streams.
    func announce(_ notices: [ReplicaNotice]) {
        guard !notices.isEmpty else { return }
        let continuations = core.withLock { Array($0.watchers.notices.values) }
        for continuation in continuations {
            for notice in notices { continuation.yield(notice) }
        }
    }

    static func status(of core: Core) -> SyncStatus {
        let pending = core.model.pending.count
        let head = core.model.confirmed.head
        switch core.link {
        case .stopped(let error): return .stopped(error, pending: pending, lastSequence: head)
        case .idle(let reason): return .offline(pending: pending, lastSequence: head, reason: reason)
        case .connecting: return .syncing(pending: pending, lastSequence: head)
        case .synced: return pending == 0 ? .upToDate(lastSequence: head) : .offline(pending: pending, lastSequence: head, reason: "not syncing")
        case .live: return core.caughtUp && pending == 0 ? .upToDate(lastSequence: head) : .syncing(pending: pending, lastSequence: head)
        }
    }
}
