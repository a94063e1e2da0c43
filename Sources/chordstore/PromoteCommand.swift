import ChordStoreAPI
import ArgumentParser
import ChordStoreClient
import ChordStoreDomain
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf

/// `chordstore promote`: makes a follower the leader.
struct PromoteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "promote",
        abstract: "Make the follower at --server the leader, with a new, higher epoch.",
        discussion: prose("""
            Refused when a reachable member's log is ahead (a newer last epoch, or the
            same and longer: promote that one instead). It then takes an epoch above
            every one it can see and fences the other members with it: a majority,
            itself included, must accept, after which none of them acknowledges the old
            leader. --force skips both checks: events only a member ahead of it has are
            then parked aside when that member follows. The old leader, when it sees the
            higher epoch, steps down, parks any events the new leader lacks in
            DIR/parked/ and follows. Point clients at the new leader (a follower's
            refusal of a write names it, and the Swift client moves there by itself).
            Promote is a cluster member's call: give --cluster-secret-file (the
            members' secret) when the cluster runs with authentication.
            """))
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Promote even if a reachable member has a longer log.") var force = false

    func validate() throws {
        guard global.data == nil else { throw ValidationError("promote asks a server: give --server, not --data") }
    }

    func run() async throws {
        // Once: each attempt raises the cluster's epoch, so a refused promotion is not
        // repeated (it burned several epochs).
        let status = try await clusterCall(global, .promote, Chordstore_V1_PromoteRequest.with { $0.force = force }, attempts: 1)
        print(global.json ? try status.jsonString() : StatusCommand.text(status))
    }
}

/// One call to `--server` (the first, when several are given) about that node: never
/// moved to another (no redirect, no failover), made at most `attempts` times.
func clusterCall<Request: SwiftProtobuf.Message>(
    _ global: GlobalOptions, _ method: ChordStoreAPI.Method, _ request: Request, attempts: Int = Client.RetryPolicy().attempts
) async throws -> Chordstore_V1_NodeStatus {
    var retry = Client.RetryPolicy()
    retry.attempts = attempts
    retry.redirects = 0
    retry.failover = .zero
    return try await serverCall(global, method, request, retry: retry)
}
