public import ChordStoreDomain
public import ChordStoreClient
public import Foundation

/// A node's place in a replicated cluster.
public struct ReplicationConfig: Sendable {
    /// This node's name (for logs and status).
    public var node: String
    /// This node's address as the other members and clients reach it (`HOST:PORT`).
    public var address: String
    /// The other members' addresses, as they advertise them. The cluster has
    /// `peers.count + 1` members; a quorum is a majority of them.
    public var peers: [String]
    /// Start as a follower of this leader (`nil`: start as the leader, unless a reachable
    /// peer leads with a newer epoch).
    public var follow: String?
    /// The durability of writes that do not ask for one.
    public var durability: Durability = .local
    /// The longest a quorum write waits for acknowledgements when its call has no
    /// earlier deadline.
    public var quorumTimeout: Duration = .seconds(10)
    /// Where a former leader parks the events a new leader never had.
    public var parkDirectory: URL
    /// How often a leader checks its peers for a newer leader, and a follower that lost
    /// its leader looks for one.
    public var probeInterval: Duration = .milliseconds(500)
    /// What this node shows the other members: the cluster secret, and TLS settings
    /// (docs/SECURITY.md).
    public var credentials = ClientCredentials()
    /// The coordinator that holds the leader lease and the membership (`serve
    /// --coordinator`); `nil`: the manual mode, with `--follow` and `promote`.
    public var coordinator: (any Coordinator)?
    /// The cluster's name in the coordinator (`--cluster`).
    public var cluster = ""
    /// The coordinated leader's lease.
    public var lease = LeaseTiming(ttl: .seconds(2))
    /// The id of this node's data directory (`DATA/member.id`, made when it is new): the
    /// coordinator keeps each member's, and a member whose directory changed (lost,
    /// restored from a backup) does not vouch for earlier writes until it has copied a
    /// leader. A random one by default (a directory of its own each run).
    public var incarnation = UUID().uuidString

    /// Creates a configuration.
    public init(node: String, address: String, peers: [String], follow: String?, parkDirectory: URL) {
        self.node = node
        self.address = address
        self.peers = peers
        self.follow = follow
        self.parkDirectory = parkDirectory
    }

    /// The members as configured: the peers and this node (a coordinated cluster takes
    /// them as its first member list only when it has none yet).
    public var membership: Membership { Membership(peers + [address]) }
}
