import ChordStoreDomain
package import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplication
package import ChordStoreWire
import Foundation
import SwiftProtobuf

/// A command call, parsed: what to run and the context the client sent with it.
package struct ParsedCommand: Sendable {
    var command: Command
    var context: Chordstore_V1_CommandContext
}

extension ServiceDispatcher {
    /// Whether a command asking for `durability` is answered only once a majority of the
    /// members acknowledged it (``awaitDurability(_:of:)``), not at its local commit.
    func awaitsQuorum(_ durability: Chordstore_V1_Durability) -> Bool {
        self.durability(durability) == .quorum
    }

    /// Queues a command for the writer: the one way a command runs. `completion` gets the
    /// committed event (its record is the reply's event) or the error, on the writer
    /// thread: hand it on, do not work there. The command is then on this node's disk;
    /// ``awaitsQuorum(_:)`` tells whether its answer also waits for the other members.
    package func submit(
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
        if error.reason == .notLeader {
            return notLeader(replication?.leader ?? "")
        }
        return WireError(error)
    }
}
