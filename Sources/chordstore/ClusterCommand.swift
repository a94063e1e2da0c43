import ChordStoreAPI
import ArgumentParser
import ChordStoreClient
import ChordStoreDomain
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf

/// `chordstore cluster`: the cluster as a whole, and its membership.
struct ClusterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster",
        abstract: "Show a cluster's leader and members, or add and remove members (with a coordinator).",
        discussion: prose("""
            Any member answers `status`; give several with --server a,b,c and the CLI finds
            one that answers, and the leader for `add` and `remove` (a follower's refusal
            names it). Membership changes need a cluster run with --coordinator
            (docs/REPLICATION.md, "Membership"), and an admin token or the cluster secret
            (--cluster-secret-file); so does `status`.
            """),
        subcommands: [ClusterStatusCommand.self, ClusterAddCommand.self, ClusterRemoveCommand.self],
        defaultSubcommand: ClusterStatusCommand.self)
}

/// `chordstore cluster status`.
struct ClusterStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "The leader, its epoch, and each member's role, epoch, last event and lag.",
        discussion: prose("""
            Asks a member (the first of --server that answers) for the cluster as it sees
            it: the leader and epoch (from the coordinator, when there is one), the voting
            members with what each answered within a second (or `unreachable`), how many a
            quorum write needs, and the nodes that follow the leader without voting.
            """))
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        guard global.data == nil else { throw ValidationError("cluster asks a server: give --server, not --data") }
    }

    func run() async throws {
        let status: Chordstore_V1_ClusterStatus = try await serverCall(global, .getClusterStatus, Chordstore_V1_ClusterStatusRequest(), retry: Client.RetryPolicy())
        print(global.json ? try status.jsonString() : Self.text(status))
    }

    static func text(_ status: Chordstore_V1_ClusterStatus) -> String {
        let name = status.coordinated ? "cluster \(status.cluster) (coordinated)" : "cluster (members fixed by --peer)"
        let leader = status.leader.isEmpty ? "no leader now" : "leader \(status.leader), epoch \(status.epoch)"
        let count = status.members.count == 1 ? "1 member" : "\(status.members.count) members"
        var lines = ["\(name): \(leader); \(count), a quorum is \(status.majority)"]
        let leaderSequence = status.members.first { $0.address == status.leader }?.status.lastSequence
        for member in status.members {
            guard member.reachable else {
                lines.append("  \(member.address)  unreachable")
                continue
            }
            let node = member.status
            var line = "  \(member.address)  \(node.node)  \(node.role)  epoch \(node.epoch)  event \(node.lastSequence)"
            if node.role != "leader", let leaderSequence { line += "  lag \(leaderSequence > node.lastSequence ? leaderSequence - node.lastSequence : 0)" }
            if node.leaseMillis > 0 { line += "  lease \(node.leaseMillis) ms" }
            lines.append(line)
        }
        if !status.learners.isEmpty { lines.append("learners (following, not voting): \(status.learners.joined(separator: ", "))") }
        return lines.joined(separator: "\n")
    }
}

/// `chordstore cluster add HOST:PORT`.
struct ClusterAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Make the node at HOST:PORT a voting member.",
        discussion: prose("""
            Start the node first with the cluster's --coordinator and --cluster and its own
            --advertise HOST:PORT: it copies the leader's log and follows without voting.
            The leader then waits (up to 25 s) until a majority of the new membership holds
            every event it has, quorum writes meanwhile needing a majority of both the old
            and the new members, and records the new member list in the coordinator.
            """))
    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp("The node's advertised address.", valueName: "HOST:PORT")) var address: String

    func validate() throws {
        guard global.data == nil else { throw ValidationError("cluster asks a server: give --server, not --data") }
        do { _ = try serverAddress(address) } catch { throw ValidationError("\(address) is not HOST:PORT") }
    }

    func run() async throws {
        try await changeMembers(global, .addMember, address)
    }
}

/// `chordstore cluster remove HOST:PORT`.
struct ClusterRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Stop counting the node at HOST:PORT as a voting member.",
        discussion: prose("""
            The leader waits (up to 25 s) until a majority of the remaining members holds
            every event it has, then records the new member list. Removing the leader
            hands leadership over first: it stops taking writes until the others have
            caught up, then leaves the list and gives its leader key up in one step, and
            the member furthest ahead takes over. A removed node keeps following without
            voting until it is stopped.
            """))
    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp("The member's advertised address.", valueName: "HOST:PORT")) var address: String

    func validate() throws {
        guard global.data == nil else { throw ValidationError("cluster asks a server: give --server, not --data") }
        do { _ = try serverAddress(address) } catch { throw ValidationError("\(address) is not HOST:PORT") }
    }

    func run() async throws {
        try await changeMembers(global, .removeMember, address)
    }
}

/// Runs `AddMember` or `RemoveMember` for `address` (the leader runs it: a follower's
/// refusal names it) and prints the cluster's status after.
private func changeMembers(_ global: GlobalOptions, _ method: ChordStoreAPI.Method, _ address: String) async throws {
    let status: Chordstore_V1_ClusterStatus = try await serverCall(
        global, method, Chordstore_V1_MemberChangeRequest.with { $0.address = address }, retry: Client.RetryPolicy())
    print(global.json ? try status.jsonString() : ClusterStatusCommand.text(status))
}
