import ChordStoreDomain
public import ChordStoreEngine
import ChordStoreProto
public import ChordStoreReplication
public import ChordStoreWire
public import Foundation
import SwiftProtobuf

/// Turns calls of the `chordstore.v1.ChordStore` service into engine commands and
/// queries. No I/O of its own: the connection handler feeds it request payloads and
/// writes what it returns, so it is tested without a socket.
public struct ServiceDispatcher: Sendable {
    let store: ChordStore
    let limits: WireLimits
    let node: String
    /// Live queries running now, over all connections.
    let liveQueries: ConcurrencyLimit
    /// This node's place in a replicated cluster (`nil`: a lone server, always writable).
    let replication: ReplicationNode?

    /// Creates a dispatcher over `store`.
    public init(store: ChordStore, limits: WireLimits = WireLimits(), node: String, replication: ReplicationNode? = nil) {
        self.store = store
        self.limits = limits
        self.node = node
        self.replication = replication
        self.liveQueries = ConcurrencyLimit(limits.maxLiveQueries)
    }

    /// Answers a unary call with its serialized response.
    public func unary(_ method: Method, payload: Data, context: CallContext) async throws(WireError) -> [UInt8] {
        let session = context.session
        do {
            switch method {
            case .addChordset, .renameChordset, .deleteChordset, .setChordColor, .setChordBPM, .setControlsChord,
                 .moveChordset, .deleteAll, .undo, .redo:
                return try await command(try parseCommand(method, payload: payload), session)
            case .listChordsets:
                let request = try parse(Chordstore_V1_ListChordsetsRequest.self, payload, method)
                let limit = request.limit == 0 ? limits.maxListSize : min(Int(request.limit), limits.maxListSize)
                let chordsets = try store.chordsets(order: order(request.order), limit: limit)
                return try Chordstore_V1_ChordsetList.with { $0.chordsets = chordsets.map(\.proto) }.serializedBytes()
            case .getSession:
                let request = try parse(Chordstore_V1_GetSessionRequest.self, payload, method)
                let state = try store.session(request.session.isEmpty ? session : request.session)
                return try Chordstore_V1_SessionState.with {
                    $0.session = state.session
                    $0.undoTarget = state.undoTarget ?? 0
                    $0.redoTarget = state.redoTarget ?? 0
                    $0.redoDepth = UInt64(state.redoDepth)
                }.serializedBytes()
            case .getHistory:
                return try history(try parse(Chordstore_V1_GetHistoryRequest.self, payload, method))
            case .readAsOf:
                return try await readAsOf(try parse(Chordstore_V1_ReadAsOfRequest.self, payload, method))
            case .queryChordsets:
                let request = try parse(Chordstore_V1_QueryRequest.self, payload, method)
                let page = try store.query(try query(request, maxLimit: limits.maxListSize))
                return try Chordstore_V1_QueryPage.with {
                    $0.chordsets = page.chordsets.map(\.proto)
                    $0.nextCursor = page.nextCursor.map { Data($0) } ?? Data()
                    $0.sequence = page.sequence
                }.serializedBytes()
            case .countChordsets:
                let request = try parse(Chordstore_V1_QueryRequest.self, payload, method)
                let counted = try await offLoop { [store] in try store.count(try query(request, maxLimit: limits.maxListSize)) }
                return try Chordstore_V1_CountReply.with {
                    $0.count = UInt64(counted.count)
                    $0.sequence = counted.sequence
                }.serializedBytes()
            case .getChordset, .getChord, .getControlsChord, .getProfile, .health:
                return try pointRead(method, payload: payload)
            case .ackReplication:
                return try acknowledge(try parse(Chordstore_V1_ReplicationAck.self, payload, method), from: context.peerAddress)
            case .getNodeStatus:
                _ = try parse(Chordstore_V1_NodeStatusRequest.self, payload, method)
                return try nodeStatus().serializedBytes()
            case .promote:
                let request = try parse(Chordstore_V1_PromoteRequest.self, payload, method)
                guard let replication else { throw WireError(.failedPrecondition, "this server is not part of a cluster: it always leads") }
                return try await replication.promote(force: request.force).serializedBytes()
            case .fence:
                let request = try parse(Chordstore_V1_FenceRequest.self, payload, method)
                guard let replication else { throw WireError(.failedPrecondition, "this server is not part of a cluster") }
                return try await replication.fence(epoch: request.epoch, leader: request.leader).serializedBytes()
            case .readLog, .subscribe, .watchQuery, .replicate:
                throw WireError(.internal, "\(method.rawValue) is a streaming method")
            }
        } catch {
            throw WireError.wrapping(error)
        }
    }

    /// Answers the reads of one item (a chordset, a chord, the controls chord, the
    /// profile, health) synchronously: each is one short LMDB snapshot read, so the
    /// server runs them on the connection's event loop instead of hopping to a task.
    public func pointRead(_ method: Method, payload: Data) throws(WireError) -> [UInt8] {
        do {
            switch method {
            case .getChordset:
                let request = try parse(Chordstore_V1_GetChordsetRequest.self, payload, method)
                let chordsetID = try id(request.chordsetID, "chordset_id")
                guard let message = try store.chordsetMessage(chordsetID) else {
                    throw WireError(.notFound, "no chordset has id \(chordsetID)")
                }
                return message
            case .getChord:
                let request = try parse(Chordstore_V1_GetChordRequest.self, payload, method)
                let chordID = try id(request.chordID, "chord_id")
                guard let found = try store.chord(chordID) else { throw WireError(.notFound, "no chord has id \(chordID)") }
                return try Chordstore_V1_ChordView.with {
                    $0.chord = found.chord.proto
                    if let owner = found.chordsetID { $0.chordsetID = owner.protoBytes }
                }.serializedBytes()
            case .getControlsChord:
                _ = try parse(Chordstore_V1_GetControlsChordRequest.self, payload, method)
                guard let chord = try store.controlsChord() else { throw WireError(.notFound, "the controls chord is not set") }
                return try chord.proto.serializedBytes()
            case .getProfile:
                _ = try parse(Chordstore_V1_GetProfileRequest.self, payload, method)
                let profile = try store.profile()
                return try Chordstore_V1_Profile.with {
                    $0.chordsets = UInt64(profile.chordsets)
                    $0.chords = UInt64(profile.chords)
                    $0.controlsChordPresent = profile.hasControlsChord
                    $0.lastSequence = profile.lastSequence
                }.serializedBytes()
            case .health:
                _ = try parse(Chordstore_V1_HealthRequest.self, payload, method)
                let last = try store.profile().lastSequence
                return try Chordstore_V1_HealthReply.with {
                    $0.server = "chordstore \(ServerInfo.version)"
                    $0.protocolVersion = Method.protocolVersion
                    $0.node = node
                    $0.lastSequence = last
                }.serializedBytes()
            default:
                throw WireError(.internal, "\(method.rawValue) is not a point read")
            }
        } catch {
            throw WireError.wrapping(error)
        }
    }

    /// Answers `ReadLog`: calls `emit` with pages of `EventEnvelope`s, in order, each sent
    /// as the bytes stored in the log (no decode and re-encode; the checksum chain can be
    /// checked by the client).
    public func readLog(payload: Data, emit: ([[UInt8]]) async throws(WireError) -> Void) async throws(WireError) {
        let request: Chordstore_V1_ReadLogRequest
        do {
            request = try parse(Chordstore_V1_ReadLogRequest.self, payload, .readLog)
        } catch {
            throw WireError.wrapping(error)
        }
        var next = max(request.fromSequence, 1)
        var remaining = request.limit == 0 ? UInt64.max : request.limit
        let page = 512
        while remaining > 0 {
            var batch: [[UInt8]] = []
            do {
                try store.forEachRecord(from: next) { sequence, record in
                    batch.append(Array(record))
                    next = sequence + 1
                    return batch.count < min(page, Int(clamping: remaining))
                }
            } catch {
                // The records before a damaged one are sent, then the status names it.
                if !batch.isEmpty { try await emit(batch) }
                throw WireError(error)
            }
            if batch.isEmpty { return }
            try await emit(batch)
            remaining -= UInt64(batch.count)
        }
    }

    private func history(_ request: Chordstore_V1_GetHistoryRequest) throws -> [UInt8] {
        let limit = request.limit == 0 ? limits.maxListSize : min(Int(request.limit), limits.maxListSize)
        let events: [RecordedEvent]
        switch request.subject {
        case .chordsetID(let bytes):
            events = try store.history(chordset: try id(bytes, "chordset_id"), after: request.afterSequence, limit: limit)
        case .session(let session):
            events = try store.history(session: session, after: request.afterSequence, limit: limit)
        case nil:
            throw WireError(.invalidArgument, "GetHistory needs a chordset_id or a session")
        }
        return try Chordstore_V1_HistoryPage.with {
            $0.events = events.map { RecordCodec.envelope(for: $0) }
            $0.nextAfter = events.count == limit ? events.last?.sequence ?? 0 : 0
        }.serializedBytes()
    }

    private func readAsOf(_ request: Chordstore_V1_ReadAsOfRequest) async throws -> [UInt8] {
        let point: AsOf = switch request.asOf.point {
        case .sequence(let sequence): .sequence(sequence)
        case .timeMicros(let micros): .time(Instant(microsecondsSince1970: micros))
        case nil: throw WireError(.invalidArgument, "as_of needs a sequence or a time")
        }
        // Off the cooperative pool: a build replays up to an interval of events.
        let past = try await offLoop { [store] in try store.state(asOf: point) }
        return try Chordstore_V1_AsOfReply.with { reply in
            reply.sequence = past.sequence
            switch request.query {
            case .list(let list):
                let limit = list.limit == 0 ? limits.maxListSize : min(Int(list.limit), limits.maxListSize)
                reply.list = .with { $0.chordsets = past.chordsets(order: order(list.order), limit: limit).map(\.proto) }
            case .chordset(let get):
                let chordsetID = try id(get.chordsetID, "chordset_id")
                guard let chordset = past.chordset(chordsetID) else {
                    throw WireError(.notFound, "no chordset had id \(chordsetID) at event \(past.sequence)")
                }
                reply.chordset = chordset.proto
            case .profile:
                let profile = past.profile
                reply.profile = .with {
                    $0.chordsets = UInt64(profile.chordsets)
                    $0.chords = UInt64(profile.chords)
                    $0.controlsChordPresent = profile.hasControlsChord
                    $0.lastSequence = profile.lastSequence
                }
            case nil:
                throw WireError(.invalidArgument, "ReadAsOf needs a query: list, chordset or profile")
            }
        }.serializedBytes()
    }

    /// Runs long, blocking work (a replay, a full count) on a thread of its own instead of
    /// the cooperative pool that answers the other calls.
    private func offLoop<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// The engine query of a request, its limit capped at `maxLimit`.
    func query(_ request: Chordstore_V1_QueryRequest, maxLimit: Int) throws -> ChordsetQuery {
        var query = ChordsetQuery(
            createdFrom: request.hasCreatedFrom ? Instant(microsecondsSince1970: request.createdFrom.micros) : nil,
            createdBefore: request.hasCreatedBefore ? Instant(microsecondsSince1970: request.createdBefore.micros) : nil,
            order: order(request.order), descending: request.descending,
            limit: request.limit == 0 ? maxLimit : min(Int(request.limit), maxLimit),
            cursor: request.cursor.isEmpty ? nil : Array(request.cursor))
        if request.hasTitle {
            let match: ChordsetQuery.TitleMatch = switch request.title.match {
            case .prefix: .prefix
            case .contains: .contains
            default: .equals
            }
            query.title = (match, request.title.text)
        }
        return query
    }

    private func order(_ order: Chordstore_V1_ChordsetOrder) -> ChordsetOrder {
        switch order {
        case .index: .index
        case .title: .title
        default: .creationDate
        }
    }

    func parse<M: SwiftProtobuf.Message>(_ type: M.Type, _ payload: Data, _ method: Method) throws -> M {
        do {
            return try M(serializedBytes: payload)
        } catch {
            throw WireError(.invalidArgument, "the payload of \(method.rawValue) is not a \(M.protoMessageName): \(error)")
        }
    }

    func id(_ bytes: Data, _ field: String) throws -> UUID {
        guard bytes.count == 16 else { throw WireError(.invalidArgument, "\(field) is \(bytes.count) bytes; ids are 16") }
        return try UUID(protoBytes: bytes)
    }

    func color(_ message: Chordstore_V1_Color) -> ChordColor {
        ChordColor(hue: message.hue, purity: message.purity, brightness: message.brightness, alpha: message.alpha)
    }

    func addCommand(_ request: Chordstore_V1_AddChordsetRequest) throws -> AddChordset {
        var specs: [ChordSpec] = []
        for spec in request.chords {
            specs.append(ChordSpec(
                id: spec.id.isEmpty ? nil : try id(spec.id, "chords.id"), position: Int(spec.position),
                bpm: spec.bpm == 0 ? nil : spec.bpm, color: spec.hasColor ? color(spec.color) : nil))
        }
        return AddChordset(
            id: request.id.isEmpty ? nil : try id(request.id, "id"), title: request.title,
            creationDate: request.creationMicros == 0 ? nil : Instant(microsecondsSince1970: request.creationMicros),
            chords: specs)
    }
}

/// What this server build is.
public enum ServerInfo {
    /// The server's version.
    public static let version = "0.1.0"
}
