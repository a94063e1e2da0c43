import ChordStoreEngine
import ChordStoreReplication
import Foundation
import Logging
import Testing

/// A Replicate stream's wait for its follower's acknowledgement says when it waited for
/// nothing: the stream yields then, and only then.
@Suite("Acknowledgement waits")
struct AcknowledgementWaitTests {
    @Test("a wait with no stream of the address open, or on a node that does not serve replication, is decided at once, without the timeout")
    func decidedAtOnce() async throws {
        let store = ChordStore.inMemory()
        defer { store.close() }
        var logger = Logger(label: "acknowledgement-wait")
        logger.logLevel = .critical
        let config = ReplicationConfig(
            node: "n1", address: "127.0.0.1:7001", peers: ["127.0.0.1:7002"], follow: "127.0.0.1:7002",
            parkDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("ack-wait-\(UUID().uuidString)"))
        let node = ReplicationNode(config: config, store: store, logger: logger)
        #expect(await node.waitForAcknowledgement(from: "127.0.0.1:7003", of: 1, timeout: .seconds(30)) == .decidedAtOnce)
        node.streamChanged(address: "127.0.0.1:7003", node: "n3", delta: 1)
        // A follower (this node) serves no replication: nothing to wait for.
        #expect(await node.waitForAcknowledgement(from: "127.0.0.1:7003", of: 1, timeout: .seconds(30)) == .decidedAtOnce)
        node.streamChanged(address: "127.0.0.1:7003", node: "n3", delta: -1)
        await node.stop()
    }
}
