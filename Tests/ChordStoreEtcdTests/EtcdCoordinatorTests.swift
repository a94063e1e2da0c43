import ChordStoreDomain
import ChordStoreEtcd
import ChordStoreReplication
import ChordStoreTesting
import Synchronization
import TestSupport
import Testing

/// The coordinator against a real etcd of the test's own: the member list, the leader key
/// with its lease and epoch counter, the watch, and etcd going away and coming back.
@Suite("etcd coordinator", .serialized)
struct EtcdCoordinatorTests {
    /// A coordinator whose calls have 20 s: a machine busy with the rest of the suite can
    /// keep a fresh etcd slow for seconds (what is tested here is not timing).
    func coordinator(_ etcd: EtcdServer, cluster: String = "test") throws -> EtcdCoordinator {
        EtcdCoordinator(client: try EtcdClient(endpoints: try EtcdEndpoint.list(parsing: etcd.clientURL)), cluster: cluster, callTimeout: .seconds(20))
    }

    @Test("the first join creates the member list; later joins keep it; a member's data directory is recorded once; clusters are apart")
    func join() async throws {
        let etcd = try await EtcdServer.start()
        let one = try coordinator(etcd)
        defer { Task { await one.close() } }
        let first = try await one.join(initial: Membership(["b:2", "a:1"]))
        #expect(first.members.addresses == ["a:1", "b:2"])
        #expect(first.members.revision > 0)
        #expect(first.leader == nil)
        let again = try await one.join(initial: Membership(["c:3"]))
        #expect(again.members == first.members)
        // Each member's data directory: the first recorded stays until replaced.
        #expect(try await one.claimIncarnation("dir-A", for: "a:1", replace: false))
        #expect(try await one.claimIncarnation("dir-A", for: "a:1", replace: false))
        #expect(try await !one.claimIncarnation("dir-B", for: "a:1", replace: false))
        #expect(try await one.claimIncarnation("dir-B", for: "a:1", replace: true))
        #expect(try await !one.claimIncarnation("dir-A", for: "a:1", replace: false))
        let other = try coordinator(etcd, cluster: "other")
        defer { Task { await other.close() } }
        #expect(try await other.join(initial: Membership(["c:3"])).members.addresses == ["c:3"])
    }

    @Test("one member takes the leader key at a time; each new key gets a higher epoch, above the floor")
    func campaign() async throws {
        let etcd = try await EtcdServer.start()
        let coordinator = try coordinator(etcd)
        defer { Task { await coordinator.close() } }
        _ = try await coordinator.join(initial: Membership(["a:1", "b:2"]))
        let grants = Mutex<[Int64]>([])
        let won = try #require(try await coordinator.campaign(address: "a:1", node: "a", floor: 7, ttl: .seconds(30)) { lease, _, _ in
            grants.withLock { $0.append(lease) }
        })
        #expect(grants.withLock { $0 } == [won.lease], "the campaign told the lease it then won the key with")
        #expect(won.epoch == 8)
        #expect(won.granted == .seconds(30))
        #expect(try await coordinator.campaign(address: "b:2", node: "b", floor: 0, ttl: .seconds(30)) == nil)
        let view = try await coordinator.join(initial: Membership([]))
        #expect(view.leader == LeaderClaim(address: "a:1", node: "a", epoch: 8, lease: won.lease))
        try await coordinator.resign(lease: won.lease)
        let next = try #require(try await coordinator.campaign(address: "b:2", node: "b", floor: 0, ttl: .seconds(30)))
        #expect(next.epoch == 9)  // above every epoch taken before, whatever the floor
        #expect(try await coordinator.renew(lease: next.lease, timeout: .seconds(20)) == .seconds(30))
        try await coordinator.resign(lease: next.lease)
        #expect(try await coordinator.renew(lease: next.lease, timeout: .seconds(20)) == nil)
    }

    @Test("the watch shows the key taken, lapsed with its lease, and the member list changed by compare-and-swap")
    func watch() async throws {
        let etcd = try await EtcdServer.start()
        let coordinator = try coordinator(etcd)
        defer { Task { await coordinator.close() } }
        let start = try await coordinator.join(initial: Membership(["a:1"]))
        var views = coordinator.watch(after: start).makeAsyncIterator()
        let won = try #require(try await coordinator.campaign(address: "a:1", node: "a", floor: 0, ttl: .seconds(2)))
        let taken = try #require(try await views.next())
        #expect(taken.leader?.lease == won.lease)
        // Not renewed: etcd lets the lease lapse after its 2 s, and the key goes with it.
        let lapsed = try #require(try await views.next())
        #expect(lapsed.leader == nil)
        #expect(ContinuousClock.now - won.sentAt >= .seconds(2))
        #expect(try await coordinator.changeMembers(from: start.members, to: Membership(["a:1", "b:2"]), resigningLease: nil))
        let changed = try #require(try await views.next())
        #expect(changed.members.addresses == ["a:1", "b:2"])
        // A change from an outdated list is refused.
        #expect(try await !coordinator.changeMembers(from: start.members, to: Membership(["c:3"]), resigningLease: nil))
    }

    @Test("a leader removing itself drops the key in the same transaction as the member list")
    func handOver() async throws {
        let etcd = try await EtcdServer.start()
        let coordinator = try coordinator(etcd)
        defer { Task { await coordinator.close() } }
        let start = try await coordinator.join(initial: Membership(["a:1", "b:2"]))
        let won = try #require(try await coordinator.campaign(address: "a:1", node: "a", floor: 0, ttl: .seconds(30)))
        #expect(try await !coordinator.changeMembers(from: start.members, to: Membership(["b:2"]), resigningLease: won.lease + 1))
        #expect(try await coordinator.changeMembers(from: start.members, to: Membership(["b:2"]), resigningLease: won.lease))
        let view = try await coordinator.join(initial: Membership([]))
        #expect(view.leader == nil)
        #expect(view.members.addresses == ["b:2"])
    }

    @Test("etcd killed: calls fail with UNAVAILABLE within their deadline; restarted: the same client works again, the key kept")
    func restart() async throws {
        let etcd = try await EtcdServer.start()
        let coordinator = try coordinator(etcd)
        defer { Task { await coordinator.close() } }
        _ = try await coordinator.join(initial: Membership(["a:1"]))
        let won = try #require(try await coordinator.campaign(address: "a:1", node: "a", floor: 0, ttl: .seconds(30)))
        etcd.kill()
        let began = ContinuousClock.now
        await #expect(throws: ChordStoreError.self) { _ = try await coordinator.renew(lease: won.lease, timeout: .milliseconds(500)) }
        #expect(ContinuousClock.now - began < .seconds(3))
        try await etcd.restart()
        var renewed: Duration?
        for _ in 0..<50 where renewed == nil {
            renewed = try? await coordinator.renew(lease: won.lease, timeout: .seconds(2))
            if renewed == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(renewed != nil)
        #expect(try await coordinator.join(initial: Membership([])).leader?.lease == won.lease)
    }

    @Test("over TLS with a client certificate etcd is joined; without one, or trusting another authority, every call is refused")
    func tls() async throws {
        let certificates = try await offPool { try TestCertificates.make() }
        let etcd = try await EtcdServer.start(tls: .init(certificateFile: certificates.serverCertificate, keyFile: certificates.serverKey, clientCAFile: certificates.ca))
        #expect(etcd.clientURL.hasPrefix("https://"))
        let endpoints = try EtcdEndpoint.list(parsing: etcd.clientURL)
        func coordinator(_ tls: EtcdTLS) throws -> EtcdCoordinator {
            EtcdCoordinator(client: try EtcdClient(endpoints: endpoints, tls: tls), cluster: "tls", callTimeout: .seconds(20))
        }
        let member = try coordinator(EtcdTLS(caFile: certificates.ca, certificateFile: certificates.clientCertificate, keyFile: certificates.clientKey))
        defer { Task { await member.close() } }
        #expect(try await member.join(initial: Membership(["a:1"])).members.addresses == ["a:1"])
        let anonymous = try coordinator(EtcdTLS(caFile: certificates.ca, certificateFile: nil, keyFile: nil))
        defer { Task { await anonymous.close() } }
        await #expect(throws: ChordStoreError.self) { _ = try await anonymous.join(initial: Membership(["a:1"])) }
        let misled = try coordinator(EtcdTLS(caFile: certificates.otherCA, certificateFile: certificates.clientCertificate, keyFile: certificates.clientKey))
        defer { Task { await misled.close() } }
        await #expect(throws: ChordStoreError.self) { _ = try await misled.join(initial: Membership(["a:1"])) }
    }
}
