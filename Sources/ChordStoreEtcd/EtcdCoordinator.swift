public import ChordStoreDomain
import ChordStoreClient
import ChordStoreProto
public import ChordStoreReplication
import Foundation
import SwiftProtobuf

/// The cluster's coordinator on etcd (docs/REPLICATION.md, "Automatic failover"): under
/// `/chordstore/CLUSTER/` it keeps
/// - `leader`: a ``Chordstore_V1_LeaderRecord`` (protobuf JSON) attached to the leader's lease;
/// - `epoch`: the last epoch taken, in decimal, raised in the same transaction that creates
///   `leader`, so epochs are a monotone fencing token that etcd hands out once each;
/// - `members`: a ``Chordstore_V1_MemberList`` (protobuf JSON), changed by compare-and-swap
///   on its revision.
public final class EtcdCoordinator: Coordinator {
    /// The client, over the cluster's endpoints.
    public let client: EtcdClient
    /// The cluster's name.
    public let cluster: String
    /// How long each call to etcd may take (a lease renewal takes its own).
    public let callTimeout: Duration

    private let prefix: [UInt8]
    private var leaderKey: [UInt8] { prefix + Array("leader".utf8) }
    private var epochKey: [UInt8] { prefix + Array("epoch".utf8) }
    private var membersKey: [UInt8] { prefix + Array("members".utf8) }

    /// A coordinator for cluster `cluster` through `client`.
    public init(client: EtcdClient, cluster: String, callTimeout: Duration = .seconds(2)) {
        self.client = client
        self.cluster = cluster
        self.callTimeout = callTimeout
        self.prefix = Array("/chordstore/\(cluster)/".utf8)
    }

    /// Checks a cluster name: 1-64 characters of a-z, A-Z, 0-9, '.', '_' and '-'.
    public static func checkClusterName(_ name: String) throws(ChordStoreError) {
        let allowed = name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: "-")
        }
        guard (1...64).contains(name.utf8.count), allowed else {
            throw ChordStoreError(.invalidArgument, "a cluster name is 1-64 characters of a-z, A-Z, 0-9, '.', '_' and '-', not '\(name)'")
        }
    }

    /// The endpoints and the cluster's name, for logs.
    public var description: String { "etcd at \(client.endpoints.map(\.description).joined(separator: ",")), cluster \(cluster)" }

    /// The etcd client's own thread.
    public var executor: (any TaskExecutor)? { client.executor }

    /// Closes the connections to etcd.
    public func close() async { await client.close() }

    // MARK: Coordinator

    /// Creates `members` from `initial` unless it exists (one transaction), then reads the
    /// cluster.
    public func join(initial: Membership) async throws(ChordStoreError) -> ClusterView {
        let list = try Self.json(Chordstore_V1_MemberList.with { $0.addresses = initial.addresses })
        _ = try await client.txn(.with {
            $0.compare = [.with {
                $0.target = .version
                $0.result = .equal
                $0.key = Data(membersKey)
                $0.version = 0
            }]
            $0.success = [.with { $0.requestPut = .with {
                $0.key = Data(membersKey)
                $0.value = Data(list.utf8)
            } }]
        }, timeout: callTimeout)
        return try await read()
    }

    /// The cluster as one read of its keys shows it.
    public func read() async throws(ChordStoreError) -> ClusterView {
        let response = try await client.range(prefix, end: Self.prefixEnd(prefix), timeout: callTimeout)
        var view = ClusterView(leader: nil, members: Membership([]), revision: response.header.revision)
        for kv in response.kvs { try apply(kv, deleted: false, to: &view) }
        return view
    }

    /// Watches the cluster's keys from the revision after `view`'s, yielding the view
    /// after each answer of etcd's watch that touched them; throws when etcd cancels the
    /// watch (a compacted revision) or the stream breaks.
    public func watch(after view: ClusterView) -> AsyncThrowingStream<ClusterView, any Error> {
        let responses = client.watch(prefix, end: Self.prefixEnd(prefix), from: view.revision + 1)
        return AsyncThrowingStream { continuation in
            let task = Task {
                var current = view
                do {
                    for try await response in responses {
                        if response.canceled {
                            throw ChordStoreError(.unavailable, "etcd cancelled the watch: \(response.cancelReason.isEmpty ? "revision \(response.compactRevision) was compacted" : response.cancelReason)")
                        }
                        guard !response.events.isEmpty else { continue }
                        var next = current
                        for event in response.events { try apply(event.kv, deleted: event.type == .delete, to: &next) }
                        next.revision = response.header.revision
                        // Every answer that touched the keys, even when the view looks the
                        // same after it: a key taken and given up within one answer must
                        // still wake the members waiting for it to be free.
                        continuation.yield(next)
                        current = next
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Takes the leader key (see ``Coordinator/campaign(address:node:floor:ttl:granted:)``): reads
    /// the keys, grants a lease, and puts `leader` and `epoch` in one transaction that
    /// holds only if `leader` is absent and `epoch` unchanged since the read. When `epoch`
    /// changed meanwhile (another member won and gave the key up again), it tries again,
    /// at most five times with a short backoff, then fails with `aborted`. An answer lost
    /// after the transaction applied is found out by reading the key: the win stands.
    public func campaign(
        address: String, node: String, floor: UInt64, ttl: Duration,
        granted: @Sendable (_ lease: Int64, _ sentAt: ContinuousClock.Instant, _ ttl: Duration) -> Void
    ) async throws(ChordStoreError) -> CampaignWin? {
        var backoff = Backoff(first: .milliseconds(20), limit: .milliseconds(200), jitter: 0.5)
        for attempt in 0..<5 {
            if attempt > 0 { try? await Task.sleep(for: backoff.next()) }
            let response = try await client.range(prefix, end: Self.prefixEnd(prefix), timeout: callTimeout)
            if response.kvs.contains(where: { Array($0.key) == leaderKey }) { return nil }
            let counter = response.kvs.first { Array($0.key) == epochKey }
            let taken = counter.flatMap { UInt64(String(decoding: $0.value, as: UTF8.self)) } ?? 0
            let highest = max(floor, taken)
            guard highest < UInt64(Int64.max) else {
                throw ChordStoreError(.failedPrecondition, "epoch \(highest) is the largest possible: no epoch is left to lead with")
            }
            let epoch = highest + 1
            let sentAt = ContinuousClock.now
            let lease = try await client.grantLease(ttl: max(1, ttl.components.seconds), timeout: callTimeout)
            granted(lease.id, sentAt, .seconds(lease.ttl))
            let record = try Self.json(Chordstore_V1_LeaderRecord.with {
                $0.address = address
                $0.node = node
                $0.epoch = epoch
            })
            let request = Etcdserverpb_TxnRequest.with {
                $0.compare = [
                    .with {
                        $0.target = .create
                        $0.result = .equal
                        $0.key = Data(leaderKey)
                        $0.createRevision = 0
                    },
                    .with {
                        $0.target = .mod
                        $0.result = .equal
                        $0.key = Data(epochKey)
                        $0.modRevision = counter?.modRevision ?? 0
                    },
                ]
                $0.success = [
                    .with { $0.requestPut = .with {
                        $0.key = Data(leaderKey)
                        $0.value = Data(record.utf8)
                        $0.lease = lease.id
                    } },
                    .with { $0.requestPut = .with {
                        $0.key = Data(epochKey)
                        $0.value = Data(String(epoch).utf8)
                    } },
                ]
            }
            let won = CampaignWin(epoch: epoch, lease: lease.id, granted: .seconds(lease.ttl), sentAt: sentAt)
            do {
                if try await client.txn(request, timeout: callTimeout).succeeded { return won }
            } catch {
                // The transaction may have been applied with its answer lost: the key says.
                if let holder = try? await client.range(leaderKey, timeout: callTimeout).kvs.first, holder.lease == lease.id { return won }
                try? await client.revokeLease(lease.id, timeout: callTimeout)
                throw error
            }
            try? await client.revokeLease(lease.id, timeout: callTimeout)
        }
        throw ChordStoreError(.aborted, "the epoch counter kept changing while this node stood for leader")
    }

    /// One `LeaseKeepAlive` round within `timeout`.
    public func renew(lease id: Int64, timeout: Duration) async throws(ChordStoreError) -> Duration? {
        let ttl = try await client.keepAlive(id, timeout: timeout)
        return ttl > 0 ? .seconds(ttl) : nil
    }

    /// Revokes the lease: etcd deletes the keys attached to it, the leader key among them.
    public func resign(lease id: Int64) async throws(ChordStoreError) {
        try await client.revokeLease(id, timeout: callTimeout)
    }

    /// One transaction: `members` replaced if its revision is still `from`'s (and, with
    /// `resigningLease`, `leader` deleted if that lease holds it).
    public func changeMembers(from: Membership, to: Membership, resigningLease: Int64?) async throws(ChordStoreError) -> Bool {
        let list = try Self.json(Chordstore_V1_MemberList.with { $0.addresses = to.addresses })
        var request = Etcdserverpb_TxnRequest.with {
            $0.compare = [.with {
                $0.target = .mod
                $0.result = .equal
                $0.key = Data(membersKey)
                $0.modRevision = from.revision
            }]
            $0.success = [.with { $0.requestPut = .with {
                $0.key = Data(membersKey)
                $0.value = Data(list.utf8)
            } }]
        }
        if let resigningLease {
            request.compare.append(.with {
                $0.target = .lease
                $0.result = .equal
                $0.key = Data(leaderKey)
                $0.lease = resigningLease
            })
            request.success.append(.with { $0.requestDeleteRange = .with { $0.key = Data(leaderKey) } })
        }
        return try await client.txn(request, timeout: callTimeout).succeeded
    }

    /// Records `incarnation` as the data directory of the member at `address`
    /// (`incarnations/ADDRESS`), if none is recorded yet, or if `replace`; returns whether
    /// the one recorded now is `incarnation`.
    public func claimIncarnation(_ incarnation: String, for address: String, replace: Bool) async throws(ChordStoreError) -> Bool {
        let key = prefix + Array("incarnations/\(address)".utf8)
        let put = Etcdserverpb_RequestOp.with { $0.requestPut = .with {
            $0.key = Data(key)
            $0.value = Data(incarnation.utf8)
        } }
        if replace {
            _ = try await client.txn(.with { $0.success = [put] }, timeout: callTimeout)
            return true
        }
        let response = try await client.txn(.with {
            $0.compare = [.with {
                $0.target = .version
                $0.result = .equal
                $0.key = Data(key)
                $0.version = 0
            }]
            $0.success = [put]
            $0.failure = [.with { $0.requestRange = .with { $0.key = Data(key) } }]
        }, timeout: callTimeout)
        if response.succeeded { return true }
        guard case .responseRange(let range)? = response.responses.first?.response, let recorded = range.kvs.first else { return false }
        return String(decoding: recorded.value, as: UTF8.self) == incarnation
    }

    // MARK: Keys and values

    /// Applies one key's state (or its deletion) to `view`.
    private func apply(_ kv: Mvccpb_KeyValue, deleted: Bool, to view: inout ClusterView) throws(ChordStoreError) {
        let key = Array(kv.key)
        if key == leaderKey {
            guard !deleted else {
                view.leader = nil
                return
            }
            let record: Chordstore_V1_LeaderRecord = try Self.decode(kv.value, what: "the leader key")
            view.leader = LeaderClaim(address: record.address, node: record.node, epoch: record.epoch, lease: kv.lease)
        } else if key == membersKey {
            guard !deleted else {
                view.members = Membership([])
                return
            }
            let list: Chordstore_V1_MemberList = try Self.decode(kv.value, what: "the member list")
            view.members = Membership(list.addresses, revision: kv.modRevision)
        }
    }

    private static func json(_ message: some SwiftProtobuf.Message) throws(ChordStoreError) -> String {
        do {
            return try message.jsonString()
        } catch {
            throw ChordStoreError(.internal, "cannot encode \(type(of: message).protoMessageName): \(error)")
        }
    }

    private static func decode<M: SwiftProtobuf.Message>(_ value: Data, what: String) throws(ChordStoreError) -> M {
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = true
        do {
            return try M(jsonUTF8Bytes: value, options: options)
        } catch {
            throw ChordStoreError(.dataLoss, "\(what) in etcd is not ChordStore's: \(String(decoding: value.prefix(200), as: UTF8.self))")
        }
    }

    /// The end of the range of keys that start with `prefix`.
    static func prefixEnd(_ prefix: [UInt8]) -> [UInt8] {
        var end = prefix
        while let last = end.last {
            if last < 0xFF {
                end[end.count - 1] = last + 1
                return end
            }
            end.removeLast()
        }
        return [0]
    }
}
