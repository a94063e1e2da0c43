public import ChordStoreReplication
public import ServiceLifecycle

/// A node's replication as a `Service`: ``run()`` takes the node's role (leading, or
/// following its leader) and stops replication when the group shuts down. Put it after
/// the store and before the listener: the listener drains first, and quorum writes in
/// flight still get their acknowledgements meanwhile.
public struct ReplicationService: Service {
    private let node: ReplicationNode

    /// Runs `node`'s replication while the group runs.
    public init(_ node: ReplicationNode) {
        self.node = node
    }

    /// Starts replication, waits for graceful shutdown (or cancellation), then stops it:
    /// writes are refused from then on, and quorum waits fail.
    public func run() async throws {
        await node.start()
        try? await gracefulShutdown()
        await node.stop()
    }
}
