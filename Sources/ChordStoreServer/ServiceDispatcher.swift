import ChordStoreDomain
public import ChordStoreEngine
import ChordStoreProto
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

    /// Creates a dispatcher over `store`.
    public init(store: ChordStore, limits: WireLimits = WireLimits(), node: String) {
        self.store = store
        self.limits = limits
        self.node = node
    }

    /// Answers a unary call with its serialized response.
    public func unary(_ method: Method, payload: Data, session: String) async throws(WireError) -> [UInt8] {
        do {
            switch method {
            case .addChordset:
                let request = try parse(Chordstore_V1_AddChordsetRequest.self, payload, method)
                return try await command(.addChordset(try addCommand(request)), request.context, session)
            case .renameChordset:
                let request = try parse(Chordstore_V1_RenameChordsetRequest.self, payload, method)
                return try await command(.renameChordset(id: try id(request.chordsetID, "chordset_id"), title: request.title), request.context, session)
            case .deleteChordset:
                let request = try parse(Chordstore_V1_DeleteChordsetRequest.self, payload, method)
                return try await command(.deleteChordset(id: try id(request.chordsetID, "chordset_id")), request.context, session)
            case .setChordColor:
                let request = try parse(Chordstore_V1_SetChordColorRequest.self, payload, method)
                guard request.hasColor else { throw WireError(.invalidArgument, "color is required") }
                return try await command(
                    .setChordColor(chordID: try id(request.chordID, "chord_id"), color: color(request.color)), request.context, session)
            case .setChordBPM:
                let request = try parse(Chordstore_V1_SetChordBpmRequest.self, payload, method)
                return try await command(.setChordBPM(chordID: try id(request.chordID, "chord_id"), bpm: request.bpm), request.context, session)
            case .setControlsChord:
                let request = try parse(Chordstore_V1_SetControlsChordRequest.self, payload, method)
                guard request.hasColor else { throw WireError(.invalidArgument, "color is required") }
                let set = SetControlsChord(
                    id: request.id.isEmpty ? nil : try id(request.id, "id"), bpm: request.bpm, color: color(request.color))
                return try await command(.setControlsChord(set), request.context, session)
            case .moveChordset:
                let request = try parse(Chordstore_V1_MoveChordsetRequest.self, payload, method)
                return try await command(
                    .moveChordset(id: try id(request.chordsetID, "chordset_id"), toIndex: Int(request.toIndex)), request.context, session)
            case .deleteAll:
                let request = try parse(Chordstore_V1_DeleteAllRequest.self, payload, method)
                return try await command(.deleteAll, request.context, session)
            case .listChordsets:
                let request = try parse(Chordstore_V1_ListChordsetsRequest.self, payload, method)
                let limit = request.limit == 0 ? limits.maxListSize : min(Int(request.limit), limits.maxListSize)
                let order: ChordsetOrder = switch request.order {
                case .index: .index
                case .title: .title
                default: .creationDate
                }
                let chordsets = try store.chordsets(order: order, limit: limit)
                return try Chordstore_V1_ChordsetList.with { $0.chordsets = chordsets.map(\.proto) }.serializedBytes()
            case .getChordset, .getChord, .getControlsChord, .getProfile, .health:
                return try pointRead(method, payload: payload)
            case .readLog:
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
                guard let chordset = try store.chordset(chordsetID) else { throw WireError(.notFound, "no chordset has id \(chordsetID)") }
                return try chordset.proto.serializedBytes()
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
                throw WireError(error)
            }
            if batch.isEmpty { return }
            try await emit(batch)
            remaining -= UInt64(batch.count)
        }
    }

    private func command(_ command: Command, _ context: Chordstore_V1_CommandContext, _ session: String) async throws -> [UInt8] {
        let recorded = try await store.execute(
            command, context: CommandContext(session: context.session.isEmpty ? session : context.session, commandID: context.commandID))
        return try Chordstore_V1_CommandReply.with { $0.event = RecordCodec.envelope(for: recorded) }.serializedBytes()
    }

    private func parse<M: SwiftProtobuf.Message>(_ type: M.Type, _ payload: Data, _ method: Method) throws -> M {
        do {
            return try M(serializedBytes: payload)
        } catch {
            throw WireError(.invalidArgument, "the payload of \(method.rawValue) is not a \(M.protoMessageName): \(error)")
        }
    }

    private func id(_ bytes: Data, _ field: String) throws -> UUID {
        guard bytes.count == 16 else { throw WireError(.invalidArgument, "\(field) is \(bytes.count) bytes; ids are 16") }
        return try UUID(protoBytes: bytes)
    }

    private func color(_ message: Chordstore_V1_Color) -> ChordColor {
        ChordColor(hue: message.hue, purity: message.purity, brightness: message.brightness, alpha: message.alpha)
    }

    private func addCommand(_ request: Chordstore_V1_AddChordsetRequest) throws -> AddChordset {
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
