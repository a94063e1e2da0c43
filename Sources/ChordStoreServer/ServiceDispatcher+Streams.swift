import ChordStoreRecords
import ChordStoreAPI
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
package import ChordStoreWire
import Foundation
import SwiftProtobuf

/// The live streams: the change feed (`Subscribe`) and live queries (`WatchQuery`).
/// Both read the log and the views, never a per-subscriber copy of the events: a
/// subscriber costs its position and a bounded write buffer, and never slows writers.
extension ServiceDispatcher {
    /// The id of the call's store, which a stream keeps to: its name may stand for another
    /// store later (deleted, then created again).
    func streamStore(_ context: CallContext) throws(WireError) -> UInt32 {
        do {
            return try store.storeID(context.store)
        } catch {
            throw WireError(error)
        }
    }

    /// Ends a stream whose store was deleted while it ran (`NOT_FOUND`): reading on by its
    /// name would read another store; and one whose token was revoked while it ran
    /// (`UNAUTHENTICATED`).
    func checkStreamStore(_ id: UInt32, _ context: CallContext) throws(WireError) {
        try checkStillAuthorized(context)
        let current: UInt32?
        do {
            current = try store.storeID(context.store)
        } catch where error.code == .notFound {
            current = nil
        } catch {
            throw WireError(error)
        }
        guard current == id else {
            throw WireError(.notFound, "store \(StoreName.resolved(context.store)) was deleted while this stream was open", reason: .storeNotFound)
        }
    }

    /// Answers `Subscribe`: pages of stored records from the requested position, then,
    /// whenever the writer commits, the new ones. Ends with `UNAVAILABLE` when
    /// `isDraining()` turns true (the server is shutting down).
    package func subscribe(
        payload: RequestPayload, context: CallContext, isDraining: @escaping @Sendable () -> Bool,
        emit: MethodHandler.Emit
    ) async throws(WireError) {
        let request: Chordstore_V1_SubscribeRequest
        let chordset: UUID?
        do {
            request = try payload.decode(Chordstore_V1_SubscribeRequest.self)
            chordset = request.chordsetID.isEmpty ? nil : try UUID(protoBytes: request.chordsetID)
        } catch {
            throw WireError(.invalidArgument, "the payload of Subscribe is not a valid SubscribeRequest: \(error)")
        }
        guard request.kinds.count <= 16 else { throw WireError(.invalidArgument, "at most 16 kinds may be given") }
        for kind in request.kinds where !Event.kindNames.contains(kind) {
            throw WireError(.invalidArgument, "'\(kind)' is not an event kind; the kinds are \(Event.kindNames.sorted().joined(separator: ", "))")
        }
        let kinds = Set(request.kinds)
        let filtered = chordset != nil || !kinds.isEmpty
        var next: UInt64
        do {
            next = request.fromNow ? try store.lastSequence(store: context.store) + 1 : max(request.fromSequence, 1)
        } catch {
            throw WireError(error)
        }
        let page = 512
        let cuts = store.logCuts
        let storeID = try streamStore(context)
        while true {
            if store.logCuts != cuts {
                throw WireError(
                    .aborted,
                    "this follower cut its log back (it parked events its new leader lacks); events already sent may be gone: subscribe again")
            }
            var batch: [[UInt8]] = []
            var scanned = 0
            try checkStreamStore(storeID, context)
            do {
                try store.forEachChainedRecord(from: next, store: context.store) { sequence, record, seed in
                    next = sequence + 1
                    scanned += 1
                    if !filtered || Self.passes(record, sequence: sequence, chordset: chordset, kinds: kinds) {
                        batch.append(request.withChainSeeds ? RecordCodec.withChainSeed(record, seed: seed) : Array(record))
                    }
                    return batch.count < page && scanned < 8 * page
                }
            } catch {
                // The events before a damaged record are sent, then the status names it.
                if !batch.isEmpty { try await emit(batch.map(ReplyPayload.bytes)) }
                throw WireError(error)
            }
            try checkStreamStore(storeID, context)  // the page was read from the store the stream started on
            if !batch.isEmpty { try await emit(batch.map(ReplyPayload.bytes)) }
            if isDraining() { throw WireError(.unavailable, "the server is shutting down; subscribe again from \(next)", reason: .shuttingDown) }
            if Task.isCancelled { throw WireError(.cancelled, "the call ended") }
            if scanned > 0 {
                await Task.yield()  // catching up: read on, letting other calls run between pages
                continue
            }
            if Task.isCancelled { throw WireError(.cancelled, "the call ended") }
            await store.waitForCommit(after: next - 1, store: context.store)
        }
    }

    private static func passes(_ record: UnsafeRawBufferPointer, sequence: UInt64, chordset: UUID?, kinds: Set<String>) -> Bool {
        guard let event = try? RecordCodec.decodeChecked(record).event else { return true }
        if !kinds.isEmpty, !kinds.contains(event.kindName) { return false }
        if let chordset, event.chordsetID != chordset, !event.isCollectionWide { return false }
        return true
    }

    /// Answers `WatchQuery`: the query's first page (at most `maxLiveQuerySize`), then,
    /// after commits, the deltas that turn the previous result into the new one, each
    /// message tagged with the log position it reflects. Its slot among the live queries
    /// is the call's (``LiveCalls``), taken before it starts.
    package func watchQuery(
        payload: RequestPayload, context: CallContext, isDraining: @escaping @Sendable () -> Bool,
        emit: MethodHandler.Emit
    ) async throws(WireError) {
        let query: ChordsetQuery
        do {
            let request = try payload.decode(Chordstore_V1_QueryRequest.self)
            guard request.cursor.isEmpty else { throw WireError(.invalidArgument, "a live query starts at the beginning: no cursor") }
            query = ChordsetQuery(proto: request, maxLimit: limits.maxLiveQuerySize)
        } catch let error as WireError {
            throw error
        } catch {
            throw WireError(.invalidArgument, "the payload of WatchQuery is not a valid QueryRequest: \(error)")
        }
        let storeID = try streamStore(context)
        do {
            var current = try store.query(query, store: context.store)
            try await emit([.bytes(try Chordstore_V1_QueryUpdate.with {
                $0.sequence = current.sequence
                $0.isInitial = true
                $0.initial = current.chordsets.map(\.proto)
            }.serializedBytes())])
            while true {
                if isDraining() { throw WireError(.unavailable, "the server is shutting down", reason: .shuttingDown) }
                if Task.isCancelled { throw WireError(.cancelled, "the call ended") }
                await store.waitForCommit(after: current.sequence, store: context.store)
                guard try store.lastSequence(store: context.store) > current.sequence else { continue }
                try? await Task.sleep(for: limits.liveQueryInterval)  // fold a burst of commits into one message
                let next = try store.query(query, store: context.store)
                try checkStreamStore(storeID, context)
                let deltas = ListDelta.changes(from: current.chordsets, to: next.chordsets)
                current = next
                guard !deltas.isEmpty else { continue }
                try await emit([.bytes(try Chordstore_V1_QueryUpdate.with {
                    $0.sequence = next.sequence
                    $0.deltas = deltas.map(\.proto)
                }.serializedBytes())])
            }
        } catch {
            throw WireError.wrapping(error)
        }
    }
}
