import ChordStoreProto
public import ChordStoreWire
public import SwiftProtobuf

/// The message types of a method: what its request decodes as, and what its replies
/// (each message of a stream) are. The framed port and the gRPC endpoint pass bytes and
/// need no types; the HTTP endpoint's JSON calls do.
public struct MethodMessages: Sendable {
    /// The request message's type.
    public let request: any SwiftProtobuf.Message.Type
    /// The reply message's type (of each message, for a stream).
    public let reply: any SwiftProtobuf.Message.Type
}

extension ServiceDispatcher {
    /// Every method's message types, as proto/chordstore/v1/rpc.proto declares them
    /// (a test checks the two agree).
    public static let messages: [Method: MethodMessages] = [
        .addChordset: MethodMessages(request: Chordstore_V1_AddChordsetRequest.self, reply: Chordstore_V1_CommandReply.self),
        .renameChordset: MethodMessages(request: Chordstore_V1_RenameChordsetRequest.self, reply: Chordstore_V1_CommandReply.self),
        .deleteChordset: MethodMessages(request: Chordstore_V1_DeleteChordsetRequest.self, reply: Chordstore_V1_CommandReply.self),
        .setChordColor: MethodMessages(request: Chordstore_V1_SetChordColorRequest.self, reply: Chordstore_V1_CommandReply.self),
        .setChordBPM: MethodMessages(request: Chordstore_V1_SetChordBpmRequest.self, reply: Chordstore_V1_CommandReply.self),
        .setControlsChord: MethodMessages(request: Chordstore_V1_SetControlsChordRequest.self, reply: Chordstore_V1_CommandReply.self),
        .moveChordset: MethodMessages(request: Chordstore_V1_MoveChordsetRequest.self, reply: Chordstore_V1_CommandReply.self),
        .deleteAll: MethodMessages(request: Chordstore_V1_DeleteAllRequest.self, reply: Chordstore_V1_CommandReply.self),
        .listChordsets: MethodMessages(request: Chordstore_V1_ListChordsetsRequest.self, reply: Chordstore_V1_ChordsetList.self),
        .getChordset: MethodMessages(request: Chordstore_V1_GetChordsetRequest.self, reply: Chordstore_V1_Chordset.self),
        .getChord: MethodMessages(request: Chordstore_V1_GetChordRequest.self, reply: Chordstore_V1_ChordView.self),
        .getControlsChord: MethodMessages(request: Chordstore_V1_GetControlsChordRequest.self, reply: Chordstore_V1_Chord.self),
        .getProfile: MethodMessages(request: Chordstore_V1_GetProfileRequest.self, reply: Chordstore_V1_Profile.self),
        .readLog: MethodMessages(request: Chordstore_V1_ReadLogRequest.self, reply: Chordstore_V1_EventEnvelope.self),
        .health: MethodMessages(request: Chordstore_V1_HealthRequest.self, reply: Chordstore_V1_HealthReply.self),
        .undo: MethodMessages(request: Chordstore_V1_UndoRequest.self, reply: Chordstore_V1_CommandReply.self),
        .redo: MethodMessages(request: Chordstore_V1_RedoRequest.self, reply: Chordstore_V1_CommandReply.self),
        .getSession: MethodMessages(request: Chordstore_V1_GetSessionRequest.self, reply: Chordstore_V1_SessionState.self),
        .getHistory: MethodMessages(request: Chordstore_V1_GetHistoryRequest.self, reply: Chordstore_V1_HistoryPage.self),
        .readAsOf: MethodMessages(request: Chordstore_V1_ReadAsOfRequest.self, reply: Chordstore_V1_AsOfReply.self),
        .subscribe: MethodMessages(request: Chordstore_V1_SubscribeRequest.self, reply: Chordstore_V1_EventEnvelope.self),
        .queryChordsets: MethodMessages(request: Chordstore_V1_QueryRequest.self, reply: Chordstore_V1_QueryPage.self),
        .countChordsets: MethodMessages(request: Chordstore_V1_QueryRequest.self, reply: Chordstore_V1_CountReply.self),
        .watchQuery: MethodMessages(request: Chordstore_V1_QueryRequest.self, reply: Chordstore_V1_QueryUpdate.self),
        .replicate: MethodMessages(request: Chordstore_V1_ReplicateRequest.self, reply: Chordstore_V1_ReplicationBatch.self),
        .ackReplication: MethodMessages(request: Chordstore_V1_ReplicationAck.self, reply: Chordstore_V1_ReplicationAckReply.self),
        .getNodeStatus: MethodMessages(request: Chordstore_V1_NodeStatusRequest.self, reply: Chordstore_V1_NodeStatus.self),
        .promote: MethodMessages(request: Chordstore_V1_PromoteRequest.self, reply: Chordstore_V1_NodeStatus.self),
        .fence: MethodMessages(request: Chordstore_V1_FenceRequest.self, reply: Chordstore_V1_NodeStatus.self),
        .getLogPosition: MethodMessages(request: Chordstore_V1_LogPositionRequest.self, reply: Chordstore_V1_LogPosition.self),
        .getClusterStatus: MethodMessages(request: Chordstore_V1_ClusterStatusRequest.self, reply: Chordstore_V1_ClusterStatus.self),
        .addMember: MethodMessages(request: Chordstore_V1_MemberChangeRequest.self, reply: Chordstore_V1_ClusterStatus.self),
        .removeMember: MethodMessages(request: Chordstore_V1_MemberChangeRequest.self, reply: Chordstore_V1_ClusterStatus.self),
        .createStore: MethodMessages(request: Chordstore_V1_CreateStoreRequest.self, reply: Chordstore_V1_StoreInfo.self),
        .deleteStore: MethodMessages(request: Chordstore_V1_DeleteStoreRequest.self, reply: Chordstore_V1_DeleteStoreReply.self),
        .listStores: MethodMessages(request: Chordstore_V1_ListStoresRequest.self, reply: Chordstore_V1_StoreList.self),
        .getStoreInfo: MethodMessages(request: Chordstore_V1_GetStoreInfoRequest.self, reply: Chordstore_V1_StoreInfo.self),
        .createToken: MethodMessages(request: Chordstore_V1_CreateTokenRequest.self, reply: Chordstore_V1_CreatedToken.self),
        .revokeToken: MethodMessages(request: Chordstore_V1_RevokeTokenRequest.self, reply: Chordstore_V1_RevokeTokenReply.self),
        .listTokens: MethodMessages(request: Chordstore_V1_ListTokensRequest.self, reply: Chordstore_V1_TokenList.self),
        .backup: MethodMessages(request: Chordstore_V1_BackupRequest.self, reply: Chordstore_V1_BackupChunk.self),
        .importEvents: MethodMessages(request: Chordstore_V1_ImportEventsRequest.self, reply: Chordstore_V1_ImportEventsReply.self),
    ]
}
