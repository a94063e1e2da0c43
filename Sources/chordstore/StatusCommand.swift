import ChordStoreAPI
import ArgumentParser
import ChordStoreClient
import ChordStoreDomain
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf

/// `chordstore status`: a server's role, epoch, log position and followers' lag.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show a server's replication status: role, epoch, last event, followers and their lag.",
        discussion: prose("""
            Asks the server at --server. A leader lists each follower with its acknowledged
            event and its lag in events and milliseconds (the age of the oldest event it
            does not have yet); a follower says what its replication is doing. The last
            checksum is a hash of the whole log: equal last events and checksums mean
            byte-identical logs.
            """))
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        guard global.data == nil else { throw ValidationError("status asks a server: give --server, not --data") }
    }

    func run() async throws {
        let status = try await clusterCall(global, .getNodeStatus, Chordstore_V1_NodeStatusRequest())
        print(global.json ? try status.jsonString() : Self.text(status))
    }

    static func text(_ status: Chordstore_V1_NodeStatus) -> String {
        var lines = [
            "node \(status.node) at \(status.address.isEmpty ? "-" : status.address): \(status.role), epoch \(status.epoch)",
            "log: \(status.lastSequence) events, checksum \(String(format: "%016llx", status.lastChecksum))",
            "leader: \(status.leader.isEmpty ? "unknown" : status.leader); members: \(status.members)\(status.learner ? " (this node is not one of them: a learner)" : "")",
            "replication: \(status.replication)",
        ]
        if status.role == "leader" {
            lines.append("on a majority: up to event \(status.quorumSequence)")
            for follower in status.followers {
                lines.append(
                    "  follower \(follower.node) at \(follower.address): acked \(follower.ackedSequence), lag \(follower.lagEvents) events / \(follower.lagMillis) ms, seen \(follower.lastSeenMillis) ms ago\(follower.streaming ? "" : ", not streaming")")
            }
        }
        if status.parkedEvents > 0 { lines.append("parked: \(status.parkedEvents) events (see DIR/parked/)") }
        return lines.joined(separator: "\n")
    }
}
