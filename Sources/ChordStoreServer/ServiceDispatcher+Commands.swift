import ChordStoreDomain
public import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplication
public import ChordStoreWire
public import Foundation
import SwiftProtobuf

/// A command call, parsed: what to run and the context the client sent with it.
public struct ParsedCommand: Sendable {
    var command: Command
    var context: Chordstore_V1_CommandContext
}

extension ServiceDispatcher {
    /// Parses the request of a command method (``Method/isCommand``).
    public func parseCommand(_ method: Method, payload: Data) throws(WireError) -> ParsedCommand {
        do {
            switch method {
            case .addChordset:
                let request = try parse(Chordstore_V1_AddChordsetRequest.self, payload, method)
                return ParsedCommand(command: .addChordset(try addCommand(request)), context: request.context)
            case .renameChordset:
                let request = try parse(Chordstore_V1_RenameChordsetRequest.self, payload, method)
                return ParsedCommand(
                    command: .renameChordset(id: try id(request.chordsetID, "chordset_id"), title: request.title), context: request.context)
            case .deleteChordset:
                let request = try parse(Chordstore_V1_DeleteChordsetRequest.self, payload, method)
                return ParsedCommand(command: .deleteChordset(id: try id(request.chordsetID, "chordset_id")), context: request.context)
            case .setChordColor:
                let request = try parse(Chordstore_V1_SetChordColorRequest.self, payload, method)
                guard request.hasColor else { throw WireError(.invalidArgument, "color is required") }
                return ParsedCommand(
                    command: .setChordColor(chordID: try id(request.chordID, "chord_id"), color: color(request.color)),
                    context: request.context)
            case .setChordBPM:
                let request = try parse(Chordstore_V1_SetChordBpmRequest.self, payload, method)
                return ParsedCommand(
                    command: .setChordBPM(chordID: try id(request.chordID, "chord_id"), bpm: request.bpm), context: request.context)
            case .setControlsChord:
                let request = try parse(Chordstore_V1_SetControlsChordRequest.self, payload, method)
                guard request.hasColor else { throw WireError(.invalidArgument, "color is required") }
                let set = SetControlsChord(
                    id: request.id.isEmpty ? nil : try id(request.id, "id"), bpm: request.bpm, color: color(request.color))
                return ParsedCommand(command: .setControlsChord(set), context: request.context)
            case .moveChordset:
                let request = try parse(Chordstore_V1_MoveChordsetRequest.self, payload, method)
                return ParsedCommand(
                    command: .moveChordset(id: try id(request.chordsetID, "chordset_id"), toIndex: Int(request.toIndex)),
                    context: request.context)
            case .deleteAll:
                return ParsedCommand(command: .deleteAll, context: try parse(Chordstore_V1_DeleteAllRequest.self, payload, method).context)
            case .undo:
                return ParsedCommand(command: .undo, context: try parse(Chordstore_V1_UndoRequest.self, payload, method).context)
            case .redo:
                return ParsedCommand(command: .redo, context: try parse(Chordstore_V1_RedoRequest.self, payload, method).context)
            default:
                throw WireError(.internal, "\(method.rawValue) is not a command")
            }
        } catch {
            throw WireError.wrapping(error)
        }
    }

    /// Whether the answer to `parsed` waits for nothing but the local commit: then
    /// ``submit(_:session:completion:)`` can run it without a task.
    public func answersAtLocalCommit(_ parsed: ParsedCommand) -> Bool {
        durability(parsed.context.durability) == .local
    }

    /// Queues a command whose answer is its local commit (see
    /// ``answersAtLocalCommit(_:)``); `completion` gets the reply's event or the error,
    /// on the writer thread: hand it on, do not work there.
    public func submit(
        _ parsed: ParsedCommand, session: String, completion: @escaping @Sendable (Result<RecordedEvent, WireError>) -> Void
    ) {
        do {
            try checkLeading()
        } catch {
            completion(.failure(error))
            return
        }
        let leader = replication
        store.submit(parsed.command, context: commandContext(parsed, session)) { result in
            completion(result.mapError { Self.commandError($0, leader: leader) })
        }
    }

    /// The reply to a command: its recorded event.
    public static func commandReply(_ recorded: RecordedEvent) throws(WireError) -> [UInt8] {
        do {
            return try Chordstore_V1_CommandReply.with { $0.event = RecordCodec.envelope(for: recorded) }.serializedBytes()
        } catch {
            throw WireError(.internal, "cannot encode the reply: \(error)")
        }
    }

    /// Runs a command, waiting for the durability it asks for.
    func command(_ parsed: ParsedCommand, _ session: String) async throws -> [UInt8] {
        try checkLeading()
        let recorded: RecordedEvent
        do {
            recorded = try await store.execute(parsed.command, context: commandContext(parsed, session))
        } catch {
            throw Self.commandError(error, leader: replication)
        }
        try await awaitDurability(parsed.context.durability, of: recorded.sequence)
        return try Self.commandReply(recorded)
    }

    private func commandContext(_ parsed: ParsedCommand, _ session: String) -> CommandContext {
        let context = parsed.context
        return CommandContext(
            session: context.session.isEmpty ? session : context.session, commandID: context.commandID,
            expectedRevision: context.hasExpected ? context.expected.revision : nil)
    }

    /// A command's failure as the wire tells it: a refusal because the role changed
    /// while the command waited for the writer names the leader.
    private static func commandError(_ error: ChordStoreError, leader replication: ReplicationNode?) -> WireError {
        if error.code == .failedPrecondition, error.message == ChordStore.notLeaderRefusal.message {
            return notLeader(replication?.leader ?? "")
        }
        return WireError(error)
    }
}
