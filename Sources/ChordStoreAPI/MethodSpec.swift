import ChordStoreProto
public import SwiftProtobuf

/// One method of the `chordstore.v1.ChordStore` service, declared once: its wire name
/// (``Method``), its request and reply messages, how it runs and who may call it. The
/// server's handlers, the JSON endpoint's messages, the gRPC service, the client's calls
/// and retries all read it (docs/ARCHITECTURE.md, "Adding a method"); a test checks the
/// table against `proto/chordstore/v1/rpc.proto`.
public struct MethodSpec: Sendable {
    /// The method.
    public let method: Method
    /// The request message's type.
    public let request: any SwiftProtobuf.Message.Type
    /// The reply message's type (of each message, for a stream).
    public let reply: any SwiftProtobuf.Message.Type
    /// How it runs.
    public let kind: MethodKind
    /// What its caller must be allowed (checked before the request is decoded).
    public let permission: Permission

    init(_ method: Method, _ request: any SwiftProtobuf.Message.Type, _ reply: any SwiftProtobuf.Message.Type, _ kind: MethodKind, _ permission: Permission) {
        self.method = method
        self.request = request
        self.reply = reply
        self.kind = kind
        self.permission = permission
    }

    /// Whether the server answers with a stream of messages.
    public var isStream: Bool { kind == .serverStream }
}

extension Method {
    /// The method's declaration.
    public var spec: MethodSpec { MethodSpec.all[self]! }
}

extension MethodSpec {
    /// The command method whose request message is `request`'s type (`nil`: none).
    public static func command(for request: any SwiftProtobuf.Message) -> MethodSpec? {
        commandsByRequest[ObjectIdentifier(type(of: request))]
    }

    /// The command methods by their request type (each command has a type of its own).
    private static let commandsByRequest: [ObjectIdentifier: MethodSpec] = Dictionary(
        uniqueKeysWithValues: list.filter { $0.kind == .command }.map { (ObjectIdentifier($0.request), $0) })
}

extension MethodSpec {
    /// Every method of the service.
    public static let all: [Method: MethodSpec] = Dictionary(uniqueKeysWithValues: list.map { ($0.method, $0) })

    private static let list: [MethodSpec] = [
        // Commands: changes of the call's store.
        MethodSpec(.addChordset, Chordstore_V1_AddChordsetRequest.self, Chordstore_V1_CommandReply.self, .command, .write),
        MethodSpec(.renameChordset, Chordstore_V1_RenameChordsetRequest.self, Chordstore_V1_CommandReply.self, .command, .write),
        MethodSpec(.deleteChordset, Chordstore_V1_DeleteChordsetRequest.self, Chordstore_V1_CommandReply.self, .command, .write),
        MethodSpec(.setChordColor, Chordstore_V1_SetChordColorRequest.self, Chordstore_V1_CommandReply.self, .command, .write),
        MethodSpec(.setChordBPM, Chordstore_V1_SetChordBpmRequest.self, Chordstore_V1_CommandReply.self, .command, .write),
        MethodSpec(.setControlsChord, Chordstore_V1_SetControlsChordRequest.self, Chordstore_V1_CommandReply.self, .command, .write),
        MethodSpec(.moveChordset, Chordstore_V1_MoveChordsetRequest.self, Chordstore_V1_CommandReply.self, .command, .write),
        MethodSpec(.deleteAll, Chordstore_V1_DeleteAllRequest.self, Chordstore_V1_CommandReply.self, .command, .write),
        MethodSpec(.undo, Chordstore_V1_UndoRequest.self, Chordstore_V1_CommandReply.self, .command, .write),
        MethodSpec(.redo, Chordstore_V1_RedoRequest.self, Chordstore_V1_CommandReply.self, .command, .write),

        // Point reads of the call's store.
        MethodSpec(.getChordset, Chordstore_V1_GetChordsetRequest.self, Chordstore_V1_Chordset.self, .pointRead, .read),
        MethodSpec(.getChord, Chordstore_V1_GetChordRequest.self, Chordstore_V1_ChordView.self, .pointRead, .read),
        MethodSpec(.getControlsChord, Chordstore_V1_GetControlsChordRequest.self, Chordstore_V1_Chord.self, .pointRead, .read),
        MethodSpec(.getProfile, Chordstore_V1_GetProfileRequest.self, Chordstore_V1_Profile.self, .pointRead, .read),
        MethodSpec(.health, Chordstore_V1_HealthRequest.self, Chordstore_V1_HealthReply.self, .pointRead, .anyone),

        // Other reads of the call's store.
        MethodSpec(.listChordsets, Chordstore_V1_ListChordsetsRequest.self, Chordstore_V1_ChordsetList.self, .unary, .read),
        MethodSpec(.getSession, Chordstore_V1_GetSessionRequest.self, Chordstore_V1_SessionState.self, .unary, .read),
        MethodSpec(.getHistory, Chordstore_V1_GetHistoryRequest.self, Chordstore_V1_HistoryPage.self, .unary, .read),
        MethodSpec(.readAsOf, Chordstore_V1_ReadAsOfRequest.self, Chordstore_V1_AsOfReply.self, .unary, .read),
        MethodSpec(.queryChordsets, Chordstore_V1_QueryRequest.self, Chordstore_V1_QueryPage.self, .unary, .read),
        MethodSpec(.countChordsets, Chordstore_V1_QueryRequest.self, Chordstore_V1_CountReply.self, .unary, .read),

        // Streams of the call's store.
        MethodSpec(.readLog, Chordstore_V1_ReadLogRequest.self, Chordstore_V1_EventEnvelope.self, .serverStream, .read),
        MethodSpec(.subscribe, Chordstore_V1_SubscribeRequest.self, Chordstore_V1_EventEnvelope.self, .serverStream, .read),
        MethodSpec(.watchQuery, Chordstore_V1_QueryRequest.self, Chordstore_V1_QueryUpdate.self, .serverStream, .read),

        // Replication and the node.
        MethodSpec(.replicate, Chordstore_V1_ReplicateRequest.self, Chordstore_V1_ReplicationBatch.self, .serverStream, .member),
        MethodSpec(.ackReplication, Chordstore_V1_ReplicationAck.self, Chordstore_V1_ReplicationAckReply.self, .unary, .member),
        MethodSpec(.getNodeStatus, Chordstore_V1_NodeStatusRequest.self, Chordstore_V1_NodeStatus.self, .unary, .clusterStatus),
        MethodSpec(.promote, Chordstore_V1_PromoteRequest.self, Chordstore_V1_NodeStatus.self, .unary, .member),
        MethodSpec(.fence, Chordstore_V1_FenceRequest.self, Chordstore_V1_NodeStatus.self, .unary, .member),
        MethodSpec(.getLogPosition, Chordstore_V1_LogPositionRequest.self, Chordstore_V1_LogPosition.self, .unary, .member),

        // The cluster as a whole.
        MethodSpec(.getClusterStatus, Chordstore_V1_ClusterStatusRequest.self, Chordstore_V1_ClusterStatus.self, .unary, .clusterStatus),
        MethodSpec(.addMember, Chordstore_V1_MemberChangeRequest.self, Chordstore_V1_ClusterStatus.self, .unary, .clusterChange),
        MethodSpec(.removeMember, Chordstore_V1_MemberChangeRequest.self, Chordstore_V1_ClusterStatus.self, .unary, .clusterChange),

        // Stores and tokens: changes of the server.
        MethodSpec(.createStore, Chordstore_V1_CreateStoreRequest.self, Chordstore_V1_StoreInfo.self, .serverChange, .admin),
        MethodSpec(.deleteStore, Chordstore_V1_DeleteStoreRequest.self, Chordstore_V1_DeleteStoreReply.self, .serverChange, .admin),
        MethodSpec(.listStores, Chordstore_V1_ListStoresRequest.self, Chordstore_V1_StoreList.self, .unary, .admin),
        // A store's own token reads its store's description (a device replica checks the
        // store's id with it); naming another store needs that store's token or admin.
        MethodSpec(.getStoreInfo, Chordstore_V1_GetStoreInfoRequest.self, Chordstore_V1_StoreInfo.self, .unary, .read),
        MethodSpec(.createToken, Chordstore_V1_CreateTokenRequest.self, Chordstore_V1_CreatedToken.self, .serverChange, .admin),
        MethodSpec(.revokeToken, Chordstore_V1_RevokeTokenRequest.self, Chordstore_V1_RevokeTokenReply.self, .serverChange, .admin),
        MethodSpec(.listTokens, Chordstore_V1_ListTokensRequest.self, Chordstore_V1_TokenList.self, .unary, .admin),

        // Operations.
        MethodSpec(.backup, Chordstore_V1_BackupRequest.self, Chordstore_V1_BackupChunk.self, .serverStream, .dataCopy),
        MethodSpec(.importEvents, Chordstore_V1_ImportEventsRequest.self, Chordstore_V1_ImportEventsReply.self, .serverChange, .admin),
    ]
}
