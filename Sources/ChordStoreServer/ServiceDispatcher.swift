import ChordStoreRecords
import ChordStoreAPI
import ChordStoreDomain
package import ChordStoreEngine
import ChordStoreProto
package import ChordStoreReplication
package import ChordStoreWire
import Foundation
import SwiftProtobuf

/// Turns calls of the `chordstore.v1.ChordStore` service into engine commands and
/// queries. No I/O of its own: the connection handler feeds it request payloads and
/// writes what it returns, so it is tested without a socket.
package struct ServiceDispatcher: Sendable {
    let store: ChordStore
    let limits: WireLimits
    let node: String
    /// The calls that may run for long, by token and store: their quota, and the calls
    /// to end when their token is revoked.
    let liveCalls: LiveCalls
    /// Backups running now: each holds two threads and a read transaction for its copy.
    let backups = ConcurrencyLimit(ServiceDispatcher.maxBackups)
    /// Most backups at once.
    static let maxBackups = 2
    /// This node's place in a replicated cluster (`nil`: a lone server, always writable).
    let replication: ReplicationNode?
    /// Checks calls' credentials (`nil`: every call may do everything).
    let authenticator: Authenticator?

    /// Creates a dispatcher over `store`.
    package init(
        store: ChordStore, limits: WireLimits = WireLimits(), node: String, replication: ReplicationNode? = nil,
        authenticator: Authenticator? = nil
    ) {
        self.store = store
        self.limits = limits
        self.node = node
        self.replication = replication
        self.authenticator = authenticator
        var isLive: (@Sendable (TokenGrant) -> Bool)?
        if let authenticator { isLive = { authenticator.isLive($0) } }
        self.liveCalls = LiveCalls(limits: limits, isLive: isLive)
    }

    // MARK: Reads of the call's store (see ``registry``)

    func getChordset(_ payload: RequestPayload, _ context: CallContext) throws -> [UInt8] {
        let request = try parse(Chordstore_V1_GetChordsetRequest.self, payload, .getChordset)
        let chordsetID = try id(request.chordsetID, "chordset_id")
        guard let message = try store.chordsetMessage(chordsetID, store: context.store) else {
            throw WireError(.notFound, "no chordset has id \(chordsetID)", reason: .chordsetNotFound)
        }
        return message
    }

    func getChord(_ payload: RequestPayload, _ context: CallContext) throws -> [UInt8] {
        let request = try parse(Chordstore_V1_GetChordRequest.self, payload, .getChord)
        let chordID = try id(request.chordID, "chord_id")
        guard let found = try store.chord(chordID, store: context.store) else { throw WireError(.notFound, "no chord has id \(chordID)", reason: .chordNotFound) }
        return try Chordstore_V1_ChordView.with {
            $0.chord = found.chord.proto
            if let owner = found.chordsetID { $0.chordsetID = owner.protoBytes }
        }.serializedBytes()
    }

    func getControlsChord(_ payload: RequestPayload, _ context: CallContext) throws -> [UInt8] {
        _ = try parse(Chordstore_V1_GetControlsChordRequest.self, payload, .getControlsChord)
        guard let chord = try store.controlsChord(store: context.store) else { throw WireError(.notFound, "the controls chord is not set", reason: .chordNotFound) }
        return try chord.proto.serializedBytes()
    }

    func getProfile(_ payload: RequestPayload, _ context: CallContext) throws -> [UInt8] {
        _ = try parse(Chordstore_V1_GetProfileRequest.self, payload, .getProfile)
        return try store.profile(store: context.store).proto.serializedBytes()
    }

    /// The server's health: its version, protocol, node, and the last event of store
    /// `default` (as before stores; `GetStoreInfo` tells any store's) when the caller may
    /// read `default` (health needs no token; the rest of a store needs its token).
    func health(_ payload: RequestPayload, _ context: CallContext) throws -> [UInt8] {
        _ = try parse(Chordstore_V1_HealthRequest.self, payload, .health)
        let last = context.principal.check(.read, store: StoreName.default) == nil ? try store.lastSequence() : 0
        return try Chordstore_V1_HealthReply.with {
            $0.server = "chordstore \(ServerInfo.version)"
            $0.protocolVersion = Method.protocolVersion
            $0.node = node
            $0.lastSequence = last
            if context.principal != .anonymous {
                $0.leader = replication?.leader ?? ""
                $0.epoch = store.epoch
            }
        }.serializedBytes()
    }

    func listChordsets(_ payload: RequestPayload, _ context: CallContext) throws -> [UInt8] {
        let request = try parse(Chordstore_V1_ListChordsetsRequest.self, payload, .listChordsets)
        let limit = request.limit == 0 ? limits.maxListSize : min(Int(request.limit), limits.maxListSize)
        let chordsets = try store.chordsets(order: ChordsetOrder(proto: request.order), limit: limit, store: context.store)
        return try Chordstore_V1_ChordsetList.with { $0.chordsets = chordsets.map(\.proto) }.serializedBytes()
    }

    func getSession(_ payload: RequestPayload, _ context: CallContext) throws -> [UInt8] {
        let request = try parse(Chordstore_V1_GetSessionRequest.self, payload, .getSession)
        let state = try store.session(request.session.isEmpty ? context.session : request.session, store: context.store)
        return try state.proto.serializedBytes()
    }

    func queryChordsets(_ payload: RequestPayload, _ context: CallContext) throws -> [UInt8] {
        let request = try parse(Chordstore_V1_QueryRequest.self, payload, .queryChordsets)
        let page = try store.query(ChordsetQuery(proto: request, maxLimit: limits.maxListSize), store: context.store)
        return try Chordstore_V1_QueryPage.with {
            $0.chordsets = page.chordsets.map(\.proto)
            $0.nextCursor = page.nextCursor.map { Data($0) } ?? Data()
            $0.sequence = page.sequence
        }.serializedBytes()
    }

    func countChordsets(_ payload: RequestPayload, _ context: CallContext) async throws -> [UInt8] {
        let request = try parse(Chordstore_V1_QueryRequest.self, payload, .countChordsets)
        let query = ChordsetQuery(proto: request, maxLimit: limits.maxListSize)
        let counted = try await offLoop { [store] in try store.count(query, store: context.store) }
        return try Chordstore_V1_CountReply.with {
            $0.count = UInt64(counted.count)
            $0.sequence = counted.sequence
        }.serializedBytes()
    }

    /// Answers `ReadLog`: calls `emit` with pages of `EventEnvelope`s, in order, each sent
    /// as the bytes stored in the log (no decode and re-encode; the checksum chain can be
    /// checked by the client).
    package func readLog(payload: RequestPayload, context: CallContext, emit: MethodHandler.Emit) async throws(WireError) {
        let request: Chordstore_V1_ReadLogRequest
        do {
            request = try parse(Chordstore_V1_ReadLogRequest.self, payload, .readLog)
        } catch {
            throw WireError.wrapping(error)
        }
        var next = max(request.fromSequence, 1)
        var remaining = request.limit == 0 ? UInt64.max : request.limit
        let page = 512
        let storeID = try streamStore(context)
        while remaining > 0 {
            var batch: [[UInt8]] = []
            try checkStreamStore(storeID, context)
            do {
                try store.forEachRecord(from: next, store: context.store) { sequence, record in
                    batch.append(Array(record))
                    next = sequence + 1
                    return batch.count < min(page, Int(clamping: remaining))
                }
            } catch {
                // The records before a damaged one are sent, then the status names it.
                if !batch.isEmpty { try await emit(batch.map(ReplyPayload.bytes)) }
                throw WireError(error)
            }
            if batch.isEmpty { return }
            try checkStreamStore(storeID, context)
            try await emit(batch.map(ReplyPayload.bytes))
            remaining -= UInt64(batch.count)
        }
    }

    func history(_ request: Chordstore_V1_GetHistoryRequest, _ context: CallContext) throws -> [UInt8] {
        let limit = request.limit == 0 ? limits.maxListSize : min(Int(request.limit), limits.maxListSize)
        let events: [RecordedEvent]
        switch request.subject {
        case .chordsetID(let bytes):
            events = try store.history(chordset: try id(bytes, "chordset_id"), after: request.afterSequence, limit: limit, store: context.store)
        case .session(let session):
            events = try store.history(session: session, after: request.afterSequence, limit: limit, store: context.store)
        case nil:
            throw WireError(.invalidArgument, "GetHistory needs a chordset_id or a session")
        }
        return try Chordstore_V1_HistoryPage.with {
            $0.events = events.map { RecordCodec.envelope(for: $0) }
            $0.nextAfter = events.count == limit ? events.last?.sequence ?? 0 : 0
        }.serializedBytes()
    }

    func readAsOf(_ request: Chordstore_V1_ReadAsOfRequest, _ context: CallContext) async throws -> [UInt8] {
        let point: AsOf = switch request.asOf.point {
        case .sequence(let sequence): .sequence(sequence)
        case .timeMicros(let micros): .time(Instant(microsecondsSince1970: micros))
        case nil: throw WireError(.invalidArgument, "as_of needs a sequence or a time")
        }
        // Off the cooperative pool: a build replays up to an interval of events.
        let past = try await offLoop { [store] in try store.state(asOf: point, store: context.store) }
        return try Chordstore_V1_AsOfReply.with { reply in
            reply.sequence = past.sequence
            switch request.query {
            case .list(let list):
                let limit = list.limit == 0 ? limits.maxListSize : min(Int(list.limit), limits.maxListSize)
                reply.list = .with { $0.chordsets = past.chordsets(order: ChordsetOrder(proto: list.order), limit: limit).map(\.proto) }
            case .chordset(let get):
                let chordsetID = try id(get.chordsetID, "chordset_id")
                guard let chordset = past.chordset(chordsetID) else {
                    throw WireError(.notFound, "no chordset had id \(chordsetID) at event \(past.sequence)", reason: .chordsetNotFound)
                }
                reply.chordset = chordset.proto
            case .profile:
                reply.profile = past.profile.proto
            case nil:
                throw WireError(.invalidArgument, "ReadAsOf needs a query: list, chordset or profile")
            }
        }.serializedBytes()
    }

    /// Runs long, blocking work (a replay, a full count) on a thread of its own instead of
    /// the cooperative pool that answers the other calls.
    func offLoop<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
        }
    }

    func parse<M: SwiftProtobuf.Message>(_ type: M.Type, _ payload: RequestPayload, _ method: Method) throws -> M {
        do {
            return try payload.decode(M.self)
        } catch {
            throw WireError(.invalidArgument, "the payload of \(method.rawValue) is not a \(M.protoMessageName): \(error)")
        }
    }

    func id(_ bytes: Data, _ field: String) throws -> UUID {
        guard bytes.count == 16 else { throw WireError(.invalidArgument, "\(field) is \(bytes.count) bytes; ids are 16") }
        return try UUID(protoBytes: bytes)
    }

    /// Parses the request of command `spec` with the one mapping of requests to commands.
    func command(_ spec: MethodSpec, _ payload: RequestPayload) throws -> ParsedCommand {
        guard let request = try parse(spec.request, payload, spec.method) as? any CommandRequest else {
            throw WireError(.internal, "\(spec.request.protoMessageName) carries no command context")
        }
        return ParsedCommand(command: try CommandMessages.command(from: request), context: request.commandContext)
    }
}

/// What this server build is.
package enum ServerInfo {
    /// The server's version.
    package static let version = "0.1.0"
}
