public import ChordStoreAPI
public import ChordStoreDomain
public import ChordStoreProto
public import ChordStoreWire
public import Foundation
import SwiftProtobuf

/// One method per call of the `chordstore.v1.ChordStore` service. Commands get a command
/// id (so a retry applies once) and return the recorded event; reads return the message.
extension Client {
    /// `AddChordset`: a chordset with eight chords (random colours unless given).
    public func addChordset(_ request: Chordstore_V1_AddChordsetRequest, timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_EventEnvelope {
        try await call(.addChordset, request, timeout: timeout, as: Chordstore_V1_CommandReply.self).event
    }

    /// `RenameChordset`.
    public func renameChordset(_ chordsetID: Data, title: String, timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_EventEnvelope {
        try await call(.renameChordset, Chordstore_V1_RenameChordsetRequest.with {
            $0.chordsetID = chordsetID
            $0.title = title
        }, timeout: timeout, as: Chordstore_V1_CommandReply.self).event
    }

    /// `DeleteChordset`: the chordset and its chords.
    public func deleteChordset(_ chordsetID: Data, timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_EventEnvelope {
        try await call(.deleteChordset, Chordstore_V1_DeleteChordsetRequest.with { $0.chordsetID = chordsetID },
                       timeout: timeout, as: Chordstore_V1_CommandReply.self).event
    }

    /// `SetChordColor`.
    public func setChordColor(_ chordID: Data, _ color: Chordstore_V1_Color, timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_EventEnvelope {
        try await call(.setChordColor, Chordstore_V1_SetChordColorRequest.with {
            $0.chordID = chordID
            $0.color = color
        }, timeout: timeout, as: Chordstore_V1_CommandReply.self).event
    }

    /// `SetChordBpm`.
    public func setChordBPM(_ chordID: Data, _ bpm: Double, timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_EventEnvelope {
        try await call(.setChordBPM, Chordstore_V1_SetChordBpmRequest.with {
            $0.chordID = chordID
            $0.bpm = bpm
        }, timeout: timeout, as: Chordstore_V1_CommandReply.self).event
    }

    /// `SetControlsChord`.
    public func setControlsChord(bpm: Double, color: Chordstore_V1_Color, timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_EventEnvelope {
        try await call(.setControlsChord, Chordstore_V1_SetControlsChordRequest.with {
            $0.bpm = bpm
            $0.color = color
        }, timeout: timeout, as: Chordstore_V1_CommandReply.self).event
    }

    /// `MoveChordset`.
    public func moveChordset(_ chordsetID: Data, to index: UInt32, timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_EventEnvelope {
        try await call(.moveChordset, Chordstore_V1_MoveChordsetRequest.with {
            $0.chordsetID = chordsetID
            $0.toIndex = index
        }, timeout: timeout, as: Chordstore_V1_CommandReply.self).event
    }

    /// `DeleteAll`.
    public func deleteAll(timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_EventEnvelope {
        try await call(.deleteAll, Chordstore_V1_DeleteAllRequest(), timeout: timeout, as: Chordstore_V1_CommandReply.self).event
    }

    /// `ListChordsets`.
    public func listChordsets(order: Chordstore_V1_ChordsetOrder = .created, limit: UInt32 = 0, timeout: Duration? = nil) async throws(ClientError) -> [Chordstore_V1_Chordset] {
        try await call(.listChordsets, Chordstore_V1_ListChordsetsRequest.with {
            $0.order = order
            $0.limit = limit
        }, timeout: timeout, as: Chordstore_V1_ChordsetList.self).chordsets
    }

    /// `GetChordset`.
    public func chordset(_ chordsetID: Data, timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_Chordset {
        try await call(.getChordset, Chordstore_V1_GetChordsetRequest.with { $0.chordsetID = chordsetID }, timeout: timeout)
    }

    /// `GetChord`.
    public func chord(_ chordID: Data, timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_ChordView {
        try await call(.getChord, Chordstore_V1_GetChordRequest.with { $0.chordID = chordID }, timeout: timeout)
    }

    /// `GetControlsChord`.
    public func controlsChord(timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_Chord {
        try await call(.getControlsChord, Chordstore_V1_GetControlsChordRequest(), timeout: timeout)
    }

    /// `GetProfile`.
    public func profile(timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_Profile {
        try await call(.getProfile, Chordstore_V1_GetProfileRequest(), timeout: timeout)
    }

    /// `ReadLog`: the events from `sequence` on, as they are stored.
    public func readLog(from sequence: UInt64 = 1, limit: UInt64 = 0) async throws(ClientError) -> ServerStream<Chordstore_V1_EventEnvelope> {
        try await stream(.readLog, Chordstore_V1_ReadLogRequest.with {
            $0.fromSequence = sequence
            $0.limit = limit
        })
    }

    /// `Health`: the server, protocol version and node.
    public func health(timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_HealthReply {
        try await call(.health, Chordstore_V1_HealthRequest(), timeout: timeout)
    }

    /// `Undo`: reverts the session's most recent change that is not undone (the session
    /// is the connection's unless `session` names another).
    public func undo(session: String = "", timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_EventEnvelope {
        try await call(.undo, Chordstore_V1_UndoRequest.with { $0.context.session = session },
                       timeout: timeout, as: Chordstore_V1_CommandReply.self).event
    }

    /// `Redo`: re-applies the session's most recently undone change.
    public func redo(session: String = "", timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_EventEnvelope {
        try await call(.redo, Chordstore_V1_RedoRequest.with { $0.context.session = session },
                       timeout: timeout, as: Chordstore_V1_CommandReply.self).event
    }

    /// `GetSession`: what undo and redo would do next for the session.
    public func sessionState(_ session: String = "", timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_SessionState {
        try await call(.getSession, Chordstore_V1_GetSessionRequest.with { $0.session = session }, timeout: timeout)
    }

    /// `GetHistory`: one page of a chordset's or a session's events, oldest first.
    public func history(_ request: Chordstore_V1_GetHistoryRequest, timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_HistoryPage {
        try await call(.getHistory, request, timeout: timeout)
    }

    /// `ReadAsOf`: a list, a chordset or the profile as it was at a point of the log.
    public func readAsOf(_ request: Chordstore_V1_ReadAsOfRequest, timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_AsOfReply {
        try await call(.readAsOf, request, timeout: timeout)
    }
}

/// The stores of the server (docs/PROTOCOL.md, "Stores"): these work on the whole server,
/// whatever ``Client/store`` the client works on.
extension Client {
    /// Creates a store; ALREADY_EXISTS if it exists, INVALID_ARGUMENT for a name against
    /// the rules, RESOURCE_EXHAUSTED past the server's `--max-stores`.
    public func createStore(_ name: String, timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_StoreInfo {
        try await call(.createStore, Chordstore_V1_CreateStoreRequest.with { $0.name = name }, timeout: timeout)
    }

    /// Deletes a store (its events stay in the log); returns the deletion's log position.
    public func deleteStore(_ name: String, timeout: Duration? = nil) async throws(ClientError) -> UInt64 {
        let reply: Chordstore_V1_DeleteStoreReply = try await call(
            .deleteStore, Chordstore_V1_DeleteStoreRequest.with { $0.name = name }, timeout: timeout)
        return reply.logSequence
    }

    /// One page of the stores after `pageToken` (`default` first, then by name).
    public func listStores(pageSize: UInt32 = 0, pageToken: String = "", timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_StoreList {
        try await call(.listStores, Chordstore_V1_ListStoresRequest.with {
            $0.pageSize = pageSize
            $0.pageToken = pageToken
        }, timeout: timeout)
    }

    /// A store's description (`name` empty: the client's store).
    public func storeInfo(_ name: String = "", timeout: Duration? = nil) async throws(ClientError) -> Chordstore_V1_StoreInfo {
        try await call(.getStoreInfo, Chordstore_V1_GetStoreInfoRequest.with { $0.name = name }, timeout: timeout)
    }
}
