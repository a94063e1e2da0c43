import ChordStoreAPI
@_spi(Raw) public import ChordStoreClient
import ChordStoreDomain
import ChordStoreRecords
import ChordStoreProto
import ChordStoreWire
import Foundation
import Synchronization
import SwiftProtobuf

/// What one sync did.
public struct SyncReport: Sendable {
    /// Writes the server recorded.
    public var pushed = 0
    /// The command ids of the writes the server recorded, with their store sequences.
    public var confirmed: [(commandID: String, sequence: UInt64)] = []
    /// Writes the server refused (taken back from the view).
    public var rejected: [RejectedWrite] = []
    /// Events copied from the store's feed.
    public var pulled = 0
    /// The last store event on the device after the sync.
    public var lastSequence: UInt64 = 0
    /// Writes still queued (made during the sync).
    public var pending = 0
}

extension Replica {
    /// Syncs once: sends the queued writes in order, then copies the store's events up to
    /// the server's last one. `client` must work on this replica's store. Throws
    /// ``ReplicaError`` with `.offline` when the server cannot be reached (nothing is
    /// lost: sync again later), and a code that needs a person otherwise.
    public func sync(with client: Client, timeout: Duration = .seconds(30)) async throws(ReplicaError) -> SyncReport {
        try begin(client)
        var report = SyncReport()
        do throws(ReplicaError) {
            try await checkStore(client, timeout: timeout)
            // A write the server holds back for now does not keep the others' changes out.
            let held = try await push(client, timeout: timeout, into: &report)
            try await pull(client, timeout: timeout, live: false, into: &report)
            try storage.flush()
            if let held { throw held }
            end(.synced)
        } catch {
            end(error.isTransient ? .idle(error.message) : .stopped(error))
            throw error
        }
        report.lastSequence = lastSequence
        report.pending = core.withLock { $0.model.pending.count }
        return report
    }

    /// Syncs continuously until the task is cancelled: sends each write as it is made,
    /// follows the store's feed, and reconnects with backoff (100 ms doubling to 10 s,
    /// ``Options/retryFirst`` and ``Options/retryLimit``) while the server is unreachable
    /// (``retryNow()`` cuts a wait short). Returns when cancelled; throws when syncing
    /// cannot go on without a person (a revoked token, a deleted store).
    public func run(with client: Client, timeout: Duration = .seconds(30)) async throws(ReplicaError) {
        try begin(client)
        var backoff = Backoff(first: options.retryFirst, limit: max(options.retryLimit, options.retryFirst), jitter: 0.25)
        while !Task.isCancelled {
            let (wakeups, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            core.withLock { $0.wake = wake }
            do {
                var report = SyncReport()
                try await checkStore(client, timeout: timeout)
                let held = try await push(client, timeout: timeout, into: &report)
                setLink(.live)
                backoff.reset()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        var report = SyncReport()
                        try await self.pull(client, timeout: timeout, live: true, into: &report)
                    }
                    group.addTask { [held] in
                        // A write held back is tried again after a while (or at the next
                        // local write), while the feed goes on.
                        var retry = Backoff(first: .seconds(1), limit: .seconds(30), jitter: 0.25)
                        var heldBack = held
                        while !Task.isCancelled {
                            let timer = heldBack.map { _ in
                                Task { [delay = retry.next()] in
                                    try await Task.sleep(for: delay)
                                    wake.yield()
                                }
                            }
                            let woken = await wakeups.first { true } != nil
                            timer?.cancel()
                            guard woken else { return }
                            var report = SyncReport()
                            heldBack = try await self.push(client, timeout: timeout, into: &report)
                            if heldBack == nil { retry.reset() }
                            self.publishStatus()
                        }
                    }
                    defer { group.cancelAll() }
                    try await group.next()
                }
            } catch let error as ReplicaError where !error.isTransient {
                end(.stopped(error))
                throw error
            } catch {
                if Task.isCancelled { break }
                let reason = (error as? ReplicaError)?.message ?? "\(error)"
                // The wait can be cut short (retryNow) from the moment the status says offline.
                let (retries, retry) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
                core.withLock { core in
                    core.retry = retry
                    core.link = .idle(reason)
                }
                publishStatus()
                await Self.sleep(for: backoff.next(), orUntil: retries)
                core.withLock { $0.retry = nil }
            }
        }
        try? storage.flush()
        end(.idle("not syncing"))
    }

    /// Makes a continuous sync (``run(with:timeout:)``) waiting to retry try at once: call
    /// it when the network comes back (``ObservedReplica`` does, from NWPathMonitor on
    /// Apple platforms). Does nothing while the sync is connected or not running.
    public func retryNow() {
        core.withLock { $0.retry }?.yield()
    }

    /// Waits `delay`, or less if `signal` yields first (or the task is cancelled).
    static func sleep(for delay: Duration, orUntil signal: AsyncStream<Void>) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: delay) }
            group.addTask { _ = await signal.first { true } }
            _ = await group.next()
            group.cancelAll()
        }
    }

    // MARK: Steps

    private func begin(_ client: Client) throws(ReplicaError) {
        if isReadOnly { throw Self.readOnlyError("sync") }
        let named = client.store.isEmpty ? StoreName.default : client.store
        guard named == storeName else {
            throw ReplicaError(.wrongStore, "the client works on store \(named), but this replica copies store \(storeName)")
        }
        let resync = try core.withLock { core throws(ReplicaError) -> String? in
            guard !core.closed else { throw ReplicaError(.storage, "the replica is closed") }
            guard !core.syncing else { throw ReplicaError(.busy, "another sync of this replica is running") }
            core.syncing = true
            core.caughtUp = false
            core.link = .connecting
            guard !core.resyncAnnounced, let reason = core.resyncReason else { return nil }
            core.resyncAnnounced = true
            return reason
        }
        publishStatus()
        // The first sync after the copy was dropped is the one that copies it again.
        if let resync { announce([.resyncing(reason: resync)]) }
    }

    private func end(_ link: Link) {
        core.withLock { core in
            core.syncing = false
            core.link = link
            core.wake?.finish()
            core.wake = nil
        }
        publishStatus()
    }

    private func setLink(_ link: Link) {
        core.withLock { $0.link = link }
        publishStatus()
    }

    /// Checks that the server's store is the one copied: its last copied event must be
    /// on the server, byte for byte (a record names its store's id and its place in the
    /// whole log, so a store deleted and created again under the same name, or a server
    /// restored from an older backup, does not match), and the store's id must be the one
    /// first seen (any token of the store reads it; on a server older than that, only an
    /// admin token could, and a store's token relies on the record check alone).
    private func checkStore(_ client: Client, timeout: Duration) async throws(ReplicaError) {
        let replaced = ReplicaError(
            .storeReplaced,
            "store \(storeName) on the server is not the one this replica copied (deleted and created again, or restored from an older backup); copy it again into a new replica directory")
        do {
            let info = try await client.storeInfo(nil, timeout: timeout)
            let known = core.withLock { $0.storeID }
            if let known, known != info.id { throw replaced }
            if known == nil {
                try storage.setStoreID(info.id)
                core.withLock { $0.storeID = info.id }
            }
        } catch let error as ClientError where error.code == .permissionDenied {
            // A store's token on a server older than its reading GetStoreInfo (which may
            // be older than reasons too): the record check below is what is left. A
            // token that may not read the store is refused by the calls that follow.
        } catch let error as ClientError {
            throw Self.failure(error, doing: "reading the store's description")
        } catch let error as ReplicaError {
            throw error
        } catch {
            throw ReplicaError(.protocolError, "\(error)")
        }
        let head = lastSequence
        let stored: [UInt8]?
        do {
            stored = try storage.record(at: head)
        } catch where error.inCopy {
            // Damaged on the device, not replaced on the server: copied again.
            try dropDamagedCopy(because: error)
            return
        }
        guard head > 0, let stored else { return }
        let target: UInt64
        do {
            target = try await client.profile(timeout: timeout).lastSequence
        } catch {
            throw Self.failure(error, doing: "reading the store's last sequence")
        }
        if target < head { throw replaced }
        do {
            var iterator = try await client.stream(.subscribe, Chordstore_V1_SubscribeRequest.with { $0.fromSequence = head })
                .makeAsyncIterator() as ServerStream<Chordstore_V1_EventEnvelope>.Iterator
            guard let first = try await iterator.nextPayload() else { throw ReplicaError(.offline, "the server ended the feed") }
            if [UInt8](first) != stored { throw replaced }
        } catch let error as ClientError {
            throw Self.failure(error, doing: "reading the store's feed")
        } catch let error as ReplicaError {
            throw error
        } catch {
            throw ReplicaError(.offline, "the feed ended: \(error)")
        }
    }

    /// Sends the queued writes in order, one at a time (a write may depend on the one
    /// before it), each under its command id. Returns `writesHeld` when the server refused
    /// the next write for now (it stays queued, with the ones after it).
    private func push(_ client: Client, timeout: Duration, into report: inout SyncReport) async throws(ReplicaError) -> ReplicaError? {
        while let (write, misdirected) = core.withLock({ core -> (PendingWrite, String?)? in
            guard !core.closed, let write = core.model.nextToPush else { return nil }
            return (write, core.model.misdirected[write.commandID])
        }) {
            try Task.checkCancellation(or: .offline)
            if let named = misdirected {
                // The change it was made to revert was refused: sent, it would revert another.
                let isRedo = if case .redo = write.command { true } else { false }
                let refusal = ClientError(
                    .failedPrecondition,
                    "this \(isRedo ? "redo" : "undo") was made to revert the device's change \(named), which the server refused; it is refused too, so that it reverts no other change",
                    reason: isRedo ? .nothingToRedo : .nothingToUndo)
                report.rejected.append(try reject(write, refusal))
                continue
            }
            let request = CommandMessages.request(for: write.command, context: PendingWriteCodec.context(write, session: session))
            guard let method = MethodSpec.command(for: request)?.method else {
                throw ReplicaError(.damaged, "no method is declared for a \(type(of: request).protoMessageName)")
            }
            do {
                let reply: Chordstore_V1_CommandReply = try await client.call(method, request, timeout: timeout, as: Chordstore_V1_CommandReply.self)
                try confirm(write, at: reply.event.sequence)
                report.pushed += 1
                report.confirmed.append((write.commandID, reply.event.sequence))
            } catch let error as ClientError where Self.isRefusal(error) {
                report.rejected.append(try reject(write, error))
            } catch let error as ClientError where Self.isHeldBack(error) {
                return ReplicaError(.writesHeld, "the server holds back the next queued write for now: \(error.code): \(error.message)")
            } catch let error as ClientError {
                throw Self.failure(error, doing: "sending a write")
            } catch let error as ReplicaError {
                throw error
            } catch {
                throw ReplicaError(.protocolError, "\(error)")
            }
        }
        return nil
    }

    private func confirm(_ write: PendingWrite, at sequence: UInt64) throws(ReplicaError) {
        let updated = core.withLock { $0.model.confirm(commandID: write.commandID, sequence: sequence) }
        if let updated { try storage.update(updated, session: session) }
        announce([.confirmed(commandID: write.commandID, sequence: sequence)])
        publishStatus()
    }

    private func reject(_ write: PendingWrite, _ error: ClientError) throws(ReplicaError) -> RejectedWrite {
        let rejection = RejectedWrite(
            write: write, code: error.code, reason: error.reason, message: error.message, rejected: .now)
        try core.withLock { core throws(ReplicaError) in
            try storage.reject(rejection, session: session)
            _ = core.model.reject(commandID: write.commandID)
        }
        announce([.rejected(rejection)])
        changed()
        return rejection
    }

    /// Copies the store's events after the last one held: up to the server's last event
    /// (`live` false), or on and on as they commit (`live`).
    private func pull(_ client: Client, timeout: Duration, live: Bool, into report: inout SyncReport) async throws(ReplicaError) {
        let target: UInt64
        do {
            target = try await client.profile(timeout: timeout).lastSequence
        } catch {
            throw Self.failure(error, doing: "reading the store's last sequence")
        }
        let head = lastSequence
        if target < head {
            throw ReplicaError(
                .storeReplaced,
                "store \(storeName) on the server ends at event \(target), but this replica holds events up to \(head): the server lost events or the store was replaced")
        }
        if target == head {
            markCaughtUp()
            if !live { return }
        }
        var iterator: ServerStream<Chordstore_V1_EventEnvelope>.Iterator
        do {
            iterator = try await client.stream(.subscribe, Chordstore_V1_SubscribeRequest.with {
                $0.fromSequence = head + 1
                $0.withChainSeeds = true
            }).makeAsyncIterator()
        } catch {
            throw Self.failure(error, doing: "subscribing to the store's feed")
        }
        var batch: [CopiedEvent] = []
        // (A last record found damaged here only leaves the first new record's link to it
        // unchecked: the next open finds the damage and copies again.)
        var chain = (try? storage.record(at: head))?.flatMap(FeedChain.init)
        while true {
            let payload: Data?
            do {
                payload = try await iterator.nextPayload()
            } catch let error as ClientError {
                throw Self.failure(error, doing: "reading the store's feed")
            } catch {
                throw ReplicaError(.offline, "the feed ended: \(error)")
            }
            guard let payload else { throw ReplicaError(.offline, "the server ended the feed") }
            let (bytes, seed) = RecordCodec.splitChainSeed([UInt8](payload))
            let recorded: RecordedEvent
            do {
                recorded = try bytes.withUnsafeBytes { raw throws(ChordStoreError) in try RecordCodec.decodeChecked(raw) }
            } catch {
                throw ReplicaError(.protocolError, "the feed sent an unreadable event: \(error)")
            }
            try FeedChain.check(bytes, recorded: recorded, seed: seed, after: &chain)
            batch.append(CopiedEvent(sequence: recorded.sequence, bytes: bytes, seed: seed, recorded: recorded))
            if recorded.sequence >= target || batch.count >= 1_024 {
                try apply(batch, caughtUp: recorded.sequence >= target)
                report.pulled += batch.count
                batch.removeAll(keepingCapacity: true)
            }
            if recorded.sequence >= target {
                markCaughtUp()
                if !live { return }
            }
            if Task.isCancelled { throw ReplicaError(.offline, "the sync was cancelled") }
        }
    }

    private func markCaughtUp() {
        core.withLock { $0.caughtUp = true }
        publishStatus()
    }

    /// Folds feed events into the confirmed store and stores them, then takes the queued
    /// writes they confirm off the queue. Once the pull is `caughtUp` (the server's last
    /// event copied), the view is saved if due (not during a long pull: each save encodes
    /// the whole view; an app stopped in the middle of one folds what it copied).
    private func apply(_ batch: [CopiedEvent], caughtUp: Bool) throws(ReplicaError) {
        var held: ReadState?
        let done = try BatchPriority.lowered { () throws(ReplicaError) in try applyLocked(batch, held: &held) }
        retire(held)
        announce(done.map { ReplicaNotice.confirmed(commandID: $0.0.commandID, sequence: $0.1) })
        changed()
        if caughtUp { saveView(closing: false, inBackground: true) }
    }

    private func applyLocked(_ batch: [CopiedEvent], held: inout ReadState?) throws(ReplicaError) -> [(PendingWrite, UInt64)] {
        try core.withLock { core throws(ReplicaError) -> [(PendingWrite, UInt64)] in
            guard !core.closed else { throw ReplicaError(.offline, "the replica is closed") }
            // Reads see the view before the batch while it is folded and stored.
            return try holdingReads(at: ReadState(core), held: &held) { () throws(ReplicaError) -> [(PendingWrite, UInt64)] in
                let done: [(PendingWrite, UInt64)]
                do {
                    done = try core.model.applyPulled(
                        batch.map(\.recorded.change), commandIDs: batch.map(\.recorded.commandID))
                    try storage.appendEvents(batch, confirming: done.map(\.0))
                    prepareIndexes(core)
                } catch let error as ReplicaError where error.inCopy {
                    // The copy of the events was found damaged while storing the batch: it is
                    // dropped and the next round copies it again (`run` retries at once).
                    let reason = "the copy of the store's events is damaged (\(error.message)); it is copied again"
                    try dropCopy(&core, reason: reason)
                    throw ReplicaError(.offline, reason)
                } catch {
                    // The model folded part of the batch in place: take it back from disk.
                    try reload(&core)
                    if let error = error as? ReplicaError { throw error }
                    throw ReplicaError(.storeReplaced, "the store's events do not apply to this replica's copy: \(error)")
                }
                return done
            }
        }
    }

    /// Refusals of a write's content, which sending it again would not change: the write
    /// is taken back. A refusal of the credential (UNAUTHENTICATED, PERMISSION_DENIED) is
    /// not one: it stops the sync as `accessRevoked` with the queue kept, for a person to
    /// give a token that may write.
    static func isRefusal(_ error: ClientError) -> Bool {
        switch error.code {
        case .invalidArgument, .notFound, .alreadyExists, .aborted, .outOfRange:
            return !isStoreGone(error)
        case .resourceExhausted:
            // Larger than the server's frame limit: the same request never fits.
            return error.reason == .frameTooLarge
        case .failedPrecondition:
            return error.leader == nil && error.reason != .notLeader
        default:
            return false
        }
    }

    /// Refusals of a write for now, by a server that answered: a full disk, a limit of the
    /// store. The write stays queued; the feed is still copied.
    static func isHeldBack(_ error: ClientError) -> Bool {
        error.code == .resourceExhausted && error.reason != .frameTooLarge
    }

    private static func isStoreGone(_ error: ClientError) -> Bool {
        error.reason == .storeNotFound
    }

    /// The replica's error for a failed call.
    static func failure(_ error: ClientError, doing what: String) -> ReplicaError {
        switch error.code {
        case .unauthenticated:
            return ReplicaError(.accessRevoked, "the server refused the credentials while \(what): \(error.message)")
        case .permissionDenied:
            return ReplicaError(.accessRevoked, "the token may not do this (\(what)): \(error.message)")
        case .notFound where isStoreGone(error):
            return ReplicaError(.storeDeleted, "the store was deleted on the server: \(error.message)")
        default:
            return ReplicaError(.offline, "\(what): \(error.code): \(error.message)")
        }
    }
}

extension Task where Success == Never, Failure == Never {
    /// Throws `code` if the current task is cancelled.
    static func checkCancellation(or code: ReplicaError.Code) throws(ReplicaError) {
        if isCancelled { throw ReplicaError(code, "the sync was cancelled") }
    }
}
