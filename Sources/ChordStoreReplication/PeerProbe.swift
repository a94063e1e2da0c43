import ChordStoreAPI
@_spi(Raw) import ChordStoreClient
import ChordStoreProto
import ChordStoreWire
import Synchronization
import SwiftProtobuf

/// Reaches the other members: one client per member, kept for the node's life, so a
/// leader's periodic look at its peers and an election's poll reuse their connections
/// (a lost one, or one that stayed silent past a call's deadline, is opened again on the
/// next call: ``Client`` drops it). Calls show the member credentials and
/// neither retry nor follow redirects.
final class PeerProbe: Sendable {
    private let credentials: ClientCredentials
    private let clients = Mutex<[String: Client]>([:])

    init(credentials: ClientCredentials) {
        self.credentials = credentials
    }

    /// The kept client of the member at `address` (`nil` if it is not `HOST:PORT`).
    func client(_ address: String) -> Client? {
        clients.withLock { clients in
            if let client = clients[address] { return client }
            let client = Client(address: address, retry: .once, credentials: credentials)
            clients[address] = client
            return client
        }
    }

    /// A client of its own for the member at `address`, whose connections come from
    /// `source` (an address of this machine) when given: the follower's streams.
    func dedicatedClient(_ address: String, from source: String?) -> Client? {
        Client(address: address, retry: .once, localAddress: source, credentials: credentials)
    }

    /// Closes every kept connection.
    func close() async {
        let all = clients.withLock { clients in
            defer { clients = [:] }
            return Array(clients.values)
        }
        for client in all { await client.close() }
    }

    /// The statuses of the members that answer within `within` (all asked at once); an
    /// unreachable or frozen member is left out.
    func statuses(_ addresses: [String], within: Duration = .seconds(1)) async -> [Chordstore_V1_NodeStatus] {
        await gather(addresses, within: within) { client in
            try await client.call(.getNodeStatus, Chordstore_V1_NodeStatusRequest(), timeout: within, as: Chordstore_V1_NodeStatus.self)
        }
    }

    /// The statuses of the members that adopted `epoch` for `leader` (see
    /// ``ReplicationNode/fence(epoch:leader:)``); refusals and silence are left out. It
    /// returns as soon as `enough` have adopted it; the others are still asked.
    func fence(_ addresses: [String], epoch: UInt64, leader: String, enough: Int, within: Duration = .seconds(2)) async -> [Chordstore_V1_NodeStatus] {
        let request = Chordstore_V1_FenceRequest.with {
            $0.epoch = epoch
            $0.leader = leader
        }
        return await gather(addresses, within: within, enough: enough) { client in
            try await client.call(.fence, request, timeout: within, as: Chordstore_V1_NodeStatus.self)
        }
    }

    /// The answers of `call` to each member that came within `within` (all asked at once),
    /// or the first `enough` of them.
    private func gather(
        _ addresses: [String], within: Duration, enough: Int? = nil,
        _ call: @escaping @Sendable (Client) async throws -> Chordstore_V1_NodeStatus
    ) async -> [Chordstore_V1_NodeStatus] {
        let (arrivals, arriving) = AsyncStream.makeStream(of: Chordstore_V1_NodeStatus?.self)
        var asked = 0
        for address in addresses {
            guard let client = client(address) else { continue }
            asked += 1
            Task { arriving.yield(try? await call(client)) }
        }
        // Time up ends the gathering: a frozen member never answers.
        let timer = Task {
            try? await Task.sleep(for: within)
            arriving.finish()
        }
        defer {
            timer.cancel()
            arriving.finish()
        }
        var statuses: [Chordstore_V1_NodeStatus] = []
        var heard = 0
        guard asked > 0 else { return statuses }
        for await status in arrivals {
            heard += 1
            if let status { statuses.append(status) }
            if heard == asked || statuses.count >= (enough ?? .max) { break }
        }
        return statuses
    }
}
