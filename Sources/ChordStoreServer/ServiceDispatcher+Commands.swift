import ChordStoreDomain
public import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplication
public import ChordStoreWire
import Foundation
import SwiftProtobuf

/// A command call, parsed: what to run and the context the client sent with it.
public struct ParsedCommand: Sendable {
    var command: Command
    var context: Chordstore_V1_CommandContext
}

extension ServiceDispatcher {
    /// Whether the answer to `parsed` waits for nothing but the local commit: then
    /// ``submit(_:session:completion:)`` can run it without a task.
    public func answersAtLocalCommit(_ parsed: ParsedCommand) -> Bool {
        durability(parsed.context.durability) == .local
    }

    /// Queues a command whose answer is its local commit (see
    /// ``answersAtLocalCommit(_:)``); `completion` gets the committed event (its record is the reply's event) or the error,
    /// on the writer thread: hand it on, do not work there.
    public func submit(
        _ parsed: ParsedCommand, context: CallContext, completion: @escaping @Sendable (Result<CommittedEvent, WireError>) -> Void
    ) {
        do {
            try checkLeading()
        } catch {
            completion(.failure(error))
            return
        }
        let leader = replication
        store.submit(parsed.command, context: commandContext(parsed, context)) { result in
            completion(result.mapError { Self.commandError($0, leader: leader) })
        }
    }

    /// Runs a command, waiting for the durability it asks for.
    /// Returns the event's record: the `event` of the `CommandReply`.
    func command(_ parsed: ParsedCommand, _ context: CallContext) async throws -> [UInt8] {
        try checkLeading()
        let committed: CommittedEvent
        do {
            committed = try await store.commit(parsed.command, context: commandContext(parsed, context))
        } catch {
            throw Self.commandError(error, leader: replication)
        }
        try await awaitDurability(parsed.context.durability, of: committed.recorded.logSequence)
        return committed.record
    }

    private func commandContext(_ parsed: ParsedCommand, _ call: CallContext) -> CommandContext {
        let context = parsed.context
        return CommandContext(
            session: context.session.isEmpty ? call.session : context.session, commandID: context.commandID,
            expectedRevision: context.hasExpected ? context.expected.revision : nil, store: StoreName.resolved(call.store),
            tokenID: call.principal.tokenID)
    }

    /// A command's failure as the wire tells it: a refusal because the role changed
    /// while the command waited for the writer names the leader.
    static func commandError(_ error: ChordStoreError, leader replication: ReplicationNode?) -> WireError {
        if error.code == .failedPrecondition, error.message == ChordStore.notLeaderRefusal.message {
            return notLeader(replication?.leader ?? "")
        }
        return WireError(error)
    }
}
