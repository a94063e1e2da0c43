package import ChordStoreAPI
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplication
import ChordStoreWire
import Foundation
import SwiftProtobuf

extension ServiceDispatcher {
    /// Every method of the service with its handler: the one place a call is routed.
    /// What it needs of its caller and how it runs is its declaration's
    /// (``ChordStoreAPI/MethodSpec``); a test checks the two agree. Commands need no
    /// entry of their own: each is its declared request, mapped to the domain's command
    /// by ``ChordStoreAPI/CommandMessages``, through the one writer.
    package static let registry: [Method: MethodEntry] = Dictionary(
        uniqueKeysWithValues: handlers.merging(commands) { own, _ in own }.map { ($0, MethodEntry($0, $1)) })

    /// The handler of every declared command.
    private static let commands: [Method: MethodHandler] = Dictionary(
        uniqueKeysWithValues: MethodSpec.all.values.filter { $0.kind == .command }.map { spec in
            (spec.method, MethodHandler.command { d, payload in try d.command(spec, payload) })
        })

    private static let handlers: [Method: MethodHandler] = [
        // Point reads of the call's store, on the event loop.
        .getChordset: .pointRead { d, payload, context in try d.getChordset(payload, context) },
        .getChord: .pointRead { d, payload, context in try d.getChord(payload, context) },
        .getControlsChord: .pointRead { d, payload, context in try d.getControlsChord(payload, context) },
        .getProfile: .pointRead { d, payload, context in try d.getProfile(payload, context) },
        .health: .pointRead { d, payload, context in try d.health(payload, context) },

        // Other reads of the call's store.
        .listChordsets: .unary { d, payload, context in try d.listChordsets(payload, context) },
        .getSession: .unary { d, payload, context in try d.getSession(payload, context) },
        .getHistory: .unary { d, payload, context in
            try d.history(try d.parse(Chordstore_V1_GetHistoryRequest.self, payload, .getHistory), context)
        },
        .readAsOf: .unary { d, payload, context in
            try await d.readAsOf(try d.parse(Chordstore_V1_ReadAsOfRequest.self, payload, .readAsOf), context)
        },
        .queryChordsets: .unary { d, payload, context in try d.queryChordsets(payload, context) },
        .countChordsets: .unary { d, payload, context in try await d.countChordsets(payload, context) },

        // Streams.
        .readLog: .serverStream { d, payload, context, _, emit throws(WireError) in try await d.readLog(payload: payload, context: context, emit: emit) },
        .subscribe: .serverStream { d, payload, context, isDraining, emit throws(WireError) in
            try await d.subscribe(payload: payload, context: context, isDraining: isDraining, emit: emit)
        },
        .watchQuery: .serverStream { d, payload, context, isDraining, emit throws(WireError) in
            try await d.watchQuery(payload: payload, context: context, isDraining: isDraining, emit: emit)
        },

        // Replication and the node (the whole server).
        .replicate: .serverStream { d, payload, context, isDraining, emit throws(WireError) in
            try await d.replicate(payload: payload, context: context, isDraining: isDraining, emit: emit)
        },
        .ackReplication: .inline { d, payload, context in
            try d.acknowledge(try d.parse(Chordstore_V1_ReplicationAck.self, payload, .ackReplication), from: context.peerAddress)
        },
        .getNodeStatus: .unary { d, payload, _ in
            _ = try d.parse(Chordstore_V1_NodeStatusRequest.self, payload, .getNodeStatus)
            return try d.nodeStatus().serializedBytes()
        },
        .promote: .unary { d, payload, _ in
            let request = try d.parse(Chordstore_V1_PromoteRequest.self, payload, .promote)
            guard let replication = d.replication else { throw WireError(.failedPrecondition, "this server is not part of a cluster: it always leads") }
            return try await replication.promote(force: request.force).serializedBytes()
        },
        .fence: .unary { d, payload, _ in
            let request = try d.parse(Chordstore_V1_FenceRequest.self, payload, .fence)
            guard let replication = d.replication else { throw WireError(.failedPrecondition, "this server is not part of a cluster") }
            return try await replication.fence(epoch: request.epoch, leader: request.leader).serializedBytes()
        },

        .getLogPosition: .unary { d, payload, _ in
            let request = try d.parse(Chordstore_V1_LogPositionRequest.self, payload, .getLogPosition)
            return try d.logPosition(request.sequence).serializedBytes()
        },

        // The cluster as a whole.
        .getClusterStatus: .unary { d, payload, _ in
            _ = try d.parse(Chordstore_V1_ClusterStatusRequest.self, payload, .getClusterStatus)
            return try await d.clusterStatus().serializedBytes()
        },
        .addMember: .unary { d, payload, context in
            let request = try d.parse(Chordstore_V1_MemberChangeRequest.self, payload, .addMember)
            return try await d.changeMembers(adding: request.address, context: context).serializedBytes()
        },
        .removeMember: .unary { d, payload, context in
            let request = try d.parse(Chordstore_V1_MemberChangeRequest.self, payload, .removeMember)
            return try await d.changeMembers(removing: request.address, context: context).serializedBytes()
        },

        // Stores (the whole server).
        .createStore: .unary { d, payload, context in try await d.createStore(payload, context) },
        .deleteStore: .unary { d, payload, context in try await d.deleteStore(payload, context) },
        .listStores: .unary { d, payload, _ in try d.listStores(payload) },
        .getStoreInfo: .unary { d, payload, context in try d.getStoreInfo(payload, context) },

        // Tokens (the whole server).
        .createToken: .unary { d, payload, context in try await d.createToken(payload, context) },
        .revokeToken: .unary { d, payload, context in try await d.revokeToken(payload, context) },
        .listTokens: .unary { d, payload, _ in try d.listTokens(payload) },

        // Operations.
        .backup: .serverStream { d, payload, _, _, emit throws(WireError) in
            try await d.backup(payload: payload, emit: emit)
        },
        .importEvents: .unary { d, payload, context in try await d.importEvents(payload, context) },
    ]
}
