import ChordStoreClient
import ChordStoreProto
import ChordStoreWire
import SwiftProtobuf

/// Asks members for their status, all at once, each within a short deadline; an
/// unreachable member is left out of the answer. Shows the member credentials.
struct PeerProbe: Sendable {
    let credentials: ClientCredentials

    func statuses(_ addresses: [String], timeout: Duration = .seconds(1)) async -> [Chordstore_V1_NodeStatus] {
        await withTaskGroup(of: Chordstore_V1_NodeStatus?.self) { group in
            for address in addresses {
                group.addTask { await status(of: address, timeout: timeout) }
            }
            var statuses: [Chordstore_V1_NodeStatus] = []
            for await status in group {
                if let status { statuses.append(status) }
            }
            return statuses
        }
    }

    /// The statuses of the members that adopted `epoch` for `leader` (see
    /// ``ReplicationNode/fence(epoch:leader:)``); refusals and silence are left out.
    func fence(_ addresses: [String], epoch: UInt64, leader: String, timeout: Duration = .seconds(2)) async -> [Chordstore_V1_NodeStatus] {
        let request = Chordstore_V1_FenceRequest.with {
            $0.epoch = epoch
            $0.leader = leader
        }
        return await withTaskGroup(of: Chordstore_V1_NodeStatus?.self) { group in
            for address in addresses {
                group.addTask {
                    guard let client = client(address) else { return nil }
                    defer { Task { await client.close() } }
                    return try? await client.call(.fence, request, timeout: timeout, as: Chordstore_V1_NodeStatus.self)
                }
            }
            var statuses: [Chordstore_V1_NodeStatus] = []
            for await status in group {
                if let status { statuses.append(status) }
            }
            return statuses
        }
    }

    /// One member's status, or `nil` if it does not answer within `timeout` (and the
    /// client's grace period: a stopped process accepts the connection, never answers).
    func status(of address: String, timeout: Duration) async -> Chordstore_V1_NodeStatus? {
        guard let client = client(address) else { return nil }
        defer { Task { await client.close() } }
        return try? await client.call(.getNodeStatus, Chordstore_V1_NodeStatusRequest(), timeout: timeout, as: Chordstore_V1_NodeStatus.self)
    }

    /// A client for a member at `HOST:PORT` that neither retries nor follows redirects;
    /// its connections come from `source` (an address of this machine) when given.
    func client(_ address: String, from source: String? = nil) -> Client? {
        Client(address: address, retry: .once, localAddress: source, credentials: credentials)
    }
}
