import ChordStoreDomain
public import ChordStoreEngine
public import ChordStoreReplication
public import ChordStoreServer

/// What the HTTP endpoint reads of a node: its store, its server and its place in a
/// cluster, turned into a readiness observation and a sample of gauges.
public struct NodeReadings: Sendable {
    let store: ChordStore
    let server: Server
    let replication: ReplicationNode?

    /// Reads `store`, served by `server`, with `replication` its place in a cluster
    /// (`nil`: a lone server, which leads).
    public init(store: ChordStore, server: Server, replication: ReplicationNode?) {
        self.store = store
        self.server = server
        self.replication = replication
    }

    /// The node as readiness sees it now.
    public func observation() -> Readiness.Observation {
        var observation = Readiness.Observation()
        observation.open = store.storageUsage != nil || store.directory == nil
        observation.draining = server.isDraining
        observation.writeRefusal = store.writeRefusal.map { "\($0.code): \($0.message)" }
        if let replication, replication.role == .follower {
            observation.leading = false
            if let heard = replication.followProgress {
                observation.following = Readiness.Following(
                    applied: (try? store.lastLogSequence()) ?? 0, leaderLast: heard.leaderLastSequence,
                    silence: ContinuousClock.now - heard.at)
            }
        }
        return observation
    }
}
