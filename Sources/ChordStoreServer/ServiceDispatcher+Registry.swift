import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplication
public import ChordStoreWire
import Foundation
import SwiftProtobuf

extension ServiceDispatcher {
    /// Every method of the service and how it is run: the one place a call is routed.
    public static let registry: [Method: MethodHandler] = [
        // Commands: changes of the call's store.
        .addChordset: .command { d, payload in
            let request = try d.parse(Chordstore_V1_AddChordsetRequest.self, payload, .addChordset)
            return ParsedCommand(command: .addChordset(try d.addCommand(request)), context: request.context)
        },
        .renameChordset: .command { d, payload in
            let request = try d.parse(Chordstore_V1_RenameChordsetRequest.self, payload, .renameChordset)
            return ParsedCommand(
                command: .renameChordset(id: try d.id(request.chordsetID, "chordset_id"), title: request.title), context: request.context)
        },
        .deleteChordset: .command { d, payload in
            let request = try d.parse(Chordstore_V1_DeleteChordsetRequest.self, payload, .deleteChordset)
            return ParsedCommand(command: .deleteChordset(id: try d.id(request.chordsetID, "chordset_id")), context: request.context)
        },
        .setChordColor: .command { d, payload in
            let request = try d.parse(Chordstore_V1_SetChordColorRequest.self, payload, .setChordColor)
            guard request.hasColor else { throw WireError(.invalidArgument, "color is required") }
            return ParsedCommand(
                command: .setChordColor(chordID: try d.id(request.chordID, "chord_id"), color: ChordColor(proto: request.color)),
                context: request.context)
        },
        .setChordBPM: .command { d, payload in
            let request = try d.parse(Chordstore_V1_SetChordBpmRequest.self, payload, .setChordBPM)
            return ParsedCommand(command: .setChordBPM(chordID: try d.id(request.chordID, "chord_id"), bpm: request.bpm), context: request.context)
        },
        .setControlsChord: .command { d, payload in
            let request = try d.parse(Chordstore_V1_SetControlsChordRequest.self, payload, .setControlsChord)
            guard request.hasColor else { throw WireError(.invalidArgument, "color is required") }
            let set = SetControlsChord(
                id: request.id.isEmpty ? nil : try d.id(request.id, "id"), bpm: request.bpm, color: ChordColor(proto: request.color))
            return ParsedCommand(command: .setControlsChord(set), context: request.context)
        },
        .moveChordset: .command { d, payload in
            let request = try d.parse(Chordstore_V1_MoveChordsetRequest.self, payload, .moveChordset)
            return ParsedCommand(
                command: .moveChordset(id: try d.id(request.chordsetID, "chordset_id"), toIndex: Int(request.toIndex)),
                context: request.context)
        },
        .deleteAll: .command { d, payload in
            ParsedCommand(command: .deleteAll, context: try d.parse(Chordstore_V1_DeleteAllRequest.self, payload, .deleteAll).context)
        },
        .undo: .command { d, payload in
            ParsedCommand(command: .undo, context: try d.parse(Chordstore_V1_UndoRequest.self, payload, .undo).context)
        },
        .redo: .command { d, payload in
            ParsedCommand(command: .redo, context: try d.parse(Chordstore_V1_RedoRequest.self, payload, .redo).context)
        },

        // Point reads of the call's store, on the event loop.
        .getChordset: .pointRead { d, payload, context in try d.getChordset(payload, context) },
        .getChord: .pointRead { d, payload, context in try d.getChord(payload, context) },
        .getControlsChord: .pointRead { d, payload, context in try d.getControlsChord(payload, context) },
        .getProfile: .pointRead { d, payload, context in try d.getProfile(payload, context) },
        .health: .pointRead { d, payload, _ in try d.health(payload) },

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
        .ackReplication: .unary { d, payload, context in
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

        // Stores (the whole server).
        .createStore: .unary { d, payload, context in try await d.createStore(payload, context) },
        .deleteStore: .unary { d, payload, context in try await d.deleteStore(payload, context) },
        .listStores: .unary { d, payload, _ in try d.listStores(payload) },
        .getStoreInfo: .unary { d, payload, context in try d.getStoreInfo(payload, context) },
    ]
}
