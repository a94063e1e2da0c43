import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplication
public import ChordStoreWire
import Foundation
import SwiftProtobuf

extension ServiceDispatcher {
    /// Every method of the service, the permission it needs and how it is run: the one
    /// place a call is routed and authorized.
    public static let registry: [Method: MethodEntry] = [
        // Commands: changes of the call's store.
        .addChordset: .write(.command { d, payload in try d.command(Chordstore_V1_AddChordsetRequest.self, payload, .addChordset) }),
        .renameChordset: .write(.command { d, payload in try d.command(Chordstore_V1_RenameChordsetRequest.self, payload, .renameChordset) }),
        .deleteChordset: .write(.command { d, payload in try d.command(Chordstore_V1_DeleteChordsetRequest.self, payload, .deleteChordset) }),
        .setChordColor: .write(.command { d, payload in try d.command(Chordstore_V1_SetChordColorRequest.self, payload, .setChordColor) }),
        .setChordBPM: .write(.command { d, payload in try d.command(Chordstore_V1_SetChordBpmRequest.self, payload, .setChordBPM) }),
        .setControlsChord: .write(.command { d, payload in
            try d.command(Chordstore_V1_SetControlsChordRequest.self, payload, .setControlsChord)
        }),
        .moveChordset: .write(.command { d, payload in try d.command(Chordstore_V1_MoveChordsetRequest.self, payload, .moveChordset) }),
        .deleteAll: .write(.command { d, payload in try d.command(Chordstore_V1_DeleteAllRequest.self, payload, .deleteAll) }),
        .undo: .write(.command { d, payload in try d.command(Chordstore_V1_UndoRequest.self, payload, .undo) }),
        .redo: .write(.command { d, payload in try d.command(Chordstore_V1_RedoRequest.self, payload, .redo) }),

        // Point reads of the call's store, on the event loop.
        .getChordset: .read(.pointRead { d, payload, context in try d.getChordset(payload, context) }),
        .getChord: .read(.pointRead { d, payload, context in try d.getChord(payload, context) }),
        .getControlsChord: .read(.pointRead { d, payload, context in try d.getControlsChord(payload, context) }),
        .getProfile: .read(.pointRead { d, payload, context in try d.getProfile(payload, context) }),
        .health: .anyone(.pointRead { d, payload, context in try d.health(payload, context) }),

        // Other reads of the call's store.
        .listChordsets: .read(.unary { d, payload, context in try d.listChordsets(payload, context) }),
        .getSession: .read(.unary { d, payload, context in try d.getSession(payload, context) }),
        .getHistory: .read(.unary { d, payload, context in
            try d.history(try d.parse(Chordstore_V1_GetHistoryRequest.self, payload, .getHistory), context)
        }),
        .readAsOf: .read(.unary { d, payload, context in
            try await d.readAsOf(try d.parse(Chordstore_V1_ReadAsOfRequest.self, payload, .readAsOf), context)
        }),
        .queryChordsets: .read(.unary { d, payload, context in try d.queryChordsets(payload, context) }),
        .countChordsets: .read(.unary { d, payload, context in try await d.countChordsets(payload, context) }),

        // Streams.
        .readLog: .read(.serverStream { d, payload, context, _, emit throws(WireError) in try await d.readLog(payload: payload, context: context, emit: emit) }),
        .subscribe: .read(.serverStream { d, payload, context, isDraining, emit throws(WireError) in
            try await d.subscribe(payload: payload, context: context, isDraining: isDraining, emit: emit)
        }),
        .watchQuery: .read(.serverStream { d, payload, context, isDraining, emit throws(WireError) in
            try await d.watchQuery(payload: payload, context: context, isDraining: isDraining, emit: emit)
        }),

        // Replication and the node (the whole server).
        .replicate: .member(.serverStream { d, payload, context, isDraining, emit throws(WireError) in
            try await d.replicate(payload: payload, context: context, isDraining: isDraining, emit: emit)
        }),
        .ackReplication: .member(.unary { d, payload, context in
            try d.acknowledge(try d.parse(Chordstore_V1_ReplicationAck.self, payload, .ackReplication), from: context.peerAddress)
        }),
        .getNodeStatus: .clusterStatus(.unary { d, payload, _ in
            _ = try d.parse(Chordstore_V1_NodeStatusRequest.self, payload, .getNodeStatus)
            return try d.nodeStatus().serializedBytes()
        }),
        .promote: .member(.unary { d, payload, _ in
            let request = try d.parse(Chordstore_V1_PromoteRequest.self, payload, .promote)
            guard let replication = d.replication else { throw WireError(.failedPrecondition, "this server is not part of a cluster: it always leads") }
            return try await replication.promote(force: request.force).serializedBytes()
        }),
        .fence: .member(.unary { d, payload, _ in
            let request = try d.parse(Chordstore_V1_FenceRequest.self, payload, .fence)
            guard let replication = d.replication else { throw WireError(.failedPrecondition, "this server is not part of a cluster") }
            return try await replication.fence(epoch: request.epoch, leader: request.leader).serializedBytes()
        }),

        .getLogPosition: .member(.unary { d, payload, _ in
            let request = try d.parse(Chordstore_V1_LogPositionRequest.self, payload, .getLogPosition)
            return try d.logPosition(request.sequence).serializedBytes()
        }),

        // The cluster as a whole.
        .getClusterStatus: .clusterStatus(.unary { d, payload, _ in
            _ = try d.parse(Chordstore_V1_ClusterStatusRequest.self, payload, .getClusterStatus)
            return try await d.clusterStatus().serializedBytes()
        }),
        .addMember: .clusterChange(.unary { d, payload, context in
            let request = try d.parse(Chordstore_V1_MemberChangeRequest.self, payload, .addMember)
            return try await d.changeMembers(adding: request.address, context: context).serializedBytes()
        }),
        .removeMember: .clusterChange(.unary { d, payload, context in
            let request = try d.parse(Chordstore_V1_MemberChangeRequest.self, payload, .removeMember)
            return try await d.changeMembers(removing: request.address, context: context).serializedBytes()
        }),

        // Stores (the whole server).
        .createStore: .admin(.unary { d, payload, context in try await d.createStore(payload, context) }),
        .deleteStore: .admin(.unary { d, payload, context in try await d.deleteStore(payload, context) }),
        .listStores: .admin(.unary { d, payload, _ in try d.listStores(payload) }),
        .getStoreInfo: .admin(.unary { d, payload, context in try d.getStoreInfo(payload, context) }),

        // Tokens (the whole server).
        .createToken: .admin(.unary { d, payload, context in try await d.createToken(payload, context) }),
        .revokeToken: .admin(.unary { d, payload, context in try await d.revokeToken(payload, context) }),
        .listTokens: .admin(.unary { d, payload, _ in try d.listTokens(payload) }),

        // Operations.
        .backup: MethodEntry(.dataCopy, .serverStream { d, payload, _, _, emit throws(WireError) in
            try await d.backup(payload: payload, emit: emit)
        }),
        .importEvents: .admin(.unary { d, payload, context in try await d.importEvents(payload, context) }),
    ]
}
