import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreReplication
import Foundation
import Logging
import TestSupport
import Testing

/// Each epoch goes to one leader: a member keeps the epoch a `Fence` granted, and to
/// whom, in its data directory, so that a restart between two promotions does not let it
/// grant the same epoch to a second leader.
@Suite("Epoch grants")
struct EpochGrantTests {
    @Test("an epoch a Fence granted stays that leader's across a restart: another leader's Fence with it is refused, the same leader's and a newer epoch are taken")
    func grantSurvivesRestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("epoch-grant-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let ports = try LoopbackPorts.free(2)
        func node(_ store: ChordStore) -> ReplicationNode {
            var logger = Logger(label: "epoch-grant")
            logger.logLevel = .critical
            let config = ReplicationConfig(
                node: "n1", address: "127.0.0.1:\(ports[0])", peers: ["127.0.0.1:\(ports[1])"], follow: "127.0.0.1:\(ports[1])",
                parkDirectory: directory.appendingPathComponent("parked"))
            return ReplicationNode(config: config, store: store, logger: logger)
        }
        let first = "127.0.0.1:7001", second = "127.0.0.1:7002"
        do {
            let store = try ChordStore.open(at: directory.appendingPathComponent("data"))
            defer { store.close() }
            let member = node(store)
            _ = try await member.fence(epoch: 5, leader: first)
            let refused = await #expect(throws: ChordStoreError.self) { _ = try await member.fence(epoch: 5, leader: second) }
            #expect(refused?.message == "epoch 5 was already granted to \(first)")
            await member.stop()
        }

        let store = try ChordStore.open(at: directory.appendingPathComponent("data"))
        defer { store.close() }
        #expect(store.epoch == 5)
        #expect(try store.epochGrant() == EpochGrant(epoch: 5, leader: first))
        let restarted = node(store)
        let refused = await #expect(throws: ChordStoreError.self) { _ = try await restarted.fence(epoch: 5, leader: second) }
        #expect(refused?.code == .failedPrecondition)
        #expect(refused?.message == "epoch 5 was already granted to \(first)", "the grant was lost in the restart")
        _ = try await restarted.fence(epoch: 5, leader: first)  // the same leader's again (a retry)
        _ = try await restarted.fence(epoch: 6, leader: second)
        #expect(store.epoch == 6)
        #expect(try store.epochGrant() == EpochGrant(epoch: 6, leader: second))
        await restarted.stop()
    }

    @Test("the store keeps one leader per epoch: another leader for the epoch kept, or an epoch older than it, is refused; a newer epoch without a leader (a batch) keeps the grant")
    func storeKeepsOneLeaderPerEpoch() async throws {
        let store = ChordStore.inMemory()
        defer { store.close() }
        #expect(try await store.adoptEpoch(5, grantedTo: "a:1") == 5)
        #expect(try await store.adoptEpoch(5, grantedTo: "a:1") == 5)  // a retry
        let other = await #expect(throws: ChordStoreError.self) { try await store.adoptEpoch(5, grantedTo: "b:2") }
        #expect(other?.code == .failedPrecondition)
        #expect(try await store.adoptEpoch(4, grantedTo: "b:2") == 5, "an older epoch changes nothing")
        #expect(try await store.adoptEpoch(6) == 6)
        #expect(try store.epochGrant() == EpochGrant(epoch: 5, leader: "a:1"))
        #expect(try await store.adoptEpoch(6, grantedTo: "b:2") == 6)
        #expect(try store.epochGrant() == EpochGrant(epoch: 6, leader: "b:2"))
    }

    @Test("a grant is stored as the epoch (8 bytes big-endian) and the leader's address; short or not UTF-8 reads as none")
    func grantBytes() {
        let grant = EpochGrant(epoch: 0x0102, leader: "a:1")
        #expect(grant.bytes == [0, 0, 0, 0, 0, 0, 1, 2, 0x61, 0x3A, 0x31])
        #expect(EpochGrant(bytes: grant.bytes) == grant)
        #expect(EpochGrant(bytes: [0, 0, 0, 0, 0, 0, 1, 2]) == nil)
        #expect(EpochGrant(bytes: [0, 0, 0, 0, 0, 0, 1, 2, 0xFF]) == nil)
    }
}
