import ChordStoreRecords
import ChordStoreAPI
@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplication
import ChordStoreServer
import ChordStoreWire
import Foundation
import Logging
import SwiftProtobuf
import TestSupport
import Testing

/// A leader and a follower in this process (two servers on 127.0.0.1): the client's move
/// to the leader, read-your-writes on the follower, status, and quorum writes.
@Suite("Replication between two servers")
struct ReplicationServerTests {
    struct Member {
        let store: ChordStore
        let node: ReplicationNode
        let server: Server
        let address: String

        static func start(
            name: String, port: Int, peer: Int, follow: Int?, security: ServerSecurity = .loopbackOnly,
            credentials: ClientCredentials = ClientCredentials(), durability: Durability = .local, quorumTimeout: Duration = .seconds(30)
        ) async throws -> Member {
            let store = ChordStore.inMemory()
            var logger = Logger(label: name)
            logger.logLevel = .critical
            var config = ReplicationConfig(
                node: name, address: "127.0.0.1:\(port)", peers: ["127.0.0.1:\(peer)"], follow: follow.map { "127.0.0.1:\($0)" },
                parkDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("parked-\(UUID().uuidString)"))
            config.quorumTimeout = quorumTimeout  // 30 s: a loaded machine can be slow; the tests that expect a failure set shorter deadlines
            config.probeInterval = .milliseconds(100)
            config.credentials = credentials
            config.durability = durability
            let node = ReplicationNode(config: config, store: store, logger: logger)
            let server = Server(store: store, node: name, replication: node, security: security, logger: logger, threads: 1)
            _ = try await server.start(host: "127.0.0.1", port: port)
            await node.start()
            return Member(store: store, node: node, server: server, address: "127.0.0.1:\(port)")
        }

        /// A leader and its follower, on two free loopback ports.
        static func startPair(
            security: ServerSecurity = .loopbackOnly, credentials: ClientCredentials = ClientCredentials(), durability: Durability = .local,
            quorumTimeout: Duration = .seconds(30)
        ) async throws -> (leader: Member, follower: Member, followerPort: Int) {
            let ports = try LoopbackPorts.free(2)
            let leader = try await start(
                name: "leader", port: ports[0], peer: ports[1], follow: nil, security: security, credentials: credentials, durability: durability,
                quorumTimeout: quorumTimeout)
            let follower = try await start(
                name: "follower", port: ports[1], peer: ports[0], follow: ports[0], security: security, credentials: credentials,
                durability: durability)
            return (leader, follower, ports[1])
        }

        func stop() async {
            await node.stop()
            await server.shutdown(grace: .seconds(1))
            store.close()
        }
    }

    @Test("a write sent to the follower moves the client to the leader; the follower serves it back with min_sequence")
    func redirectAndReadYourWrites() async throws {
        let (leader, follower, followerPort) = try await Member.startPair()
        defer { Task { await follower.stop(); await leader.stop() } }
        #expect(leader.node.role == .leader)
        #expect(follower.node.role == .follower)

        // A raw call to the follower is refused with the leader's address.
        let raw = try await Connection.connect(host: "127.0.0.1", port: followerPort)
        let refusal = await #expect(throws: ClientError.self) {
            try await raw.call(.addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "refused" }, as: Chordstore_V1_CommandReply.self)
        }
        #expect(refusal?.code == .failedPrecondition)
        #expect(refusal?.leader == leader.address)
        await raw.close()

        // The client library moves to the leader by itself.
        let client = try #require(Client(address: follower.address))
        let written = try await client.execute(.addChordset(AddChordset(title: "through the follower")))
        #expect(client.address == leader.address)
        #expect(try leader.store.chordsets().map(\.title) == ["through the follower"])

        // Read your writes on the follower: the read waits until it has the event.
        let reader = try #require(Client(address: follower.address))
        guard case .chordsetAdded(let chordset) = written.event else {
            Issue.record("\(written.event)")
            return
        }
        let found = try await reader.chordset(chordset.id, minSequence: written.sequence, timeout: .seconds(30))
        #expect(found?.title == "through the follower")
        #expect(reader.address == follower.address)
        // A position the follower does not reach: the read waits, and its deadline ends it.
        let waited = await #expect(throws: ClientError.self) {
            let _: Chordstore_V1_Profile = try await reader.call(
                .getProfile, Chordstore_V1_GetProfileRequest(), timeout: .milliseconds(300), minSequence: written.sequence + 1)
        }
        #expect(waited?.code == .deadlineExceeded)

        // The leader reports the follower's position.
        #expect(try await eventually {
            let leaderStatus: Chordstore_V1_NodeStatus = try await client.call(.getNodeStatus, Chordstore_V1_NodeStatusRequest())
            return leaderStatus.followers.first?.ackedSequence == written.sequence && leaderStatus.followers.first?.lagEvents == 0
        })
        let status = try follower.node.status()
        #expect(status.role == "follower")
        #expect(status.leader == leader.address)
        #expect(status.lastChecksum == (try leader.store.head().checksum))
        await client.close()
        await reader.close()
    }

    @Test("a follower copies every store: it serves each store's reads, and the store methods go to the leader")
    func followerServesEveryStore() async throws {
        let (leader, follower, _) = try await Member.startPair()
        defer { Task { await follower.stop(); await leader.stop() } }
        let admin = try #require(Client(address: leader.address))
        _ = try await admin.createStore("a")
        _ = try await admin.createStore("b")
        let a = try #require(Client(address: leader.address, store: "a"))
        let b = try #require(Client(address: leader.address, store: "b"))
        let x = try await a.execute(.addChordset(AddChordset(title: "X")))
        let z = try await b.execute(.addChordset(AddChordset(title: "Z")))
        _ = try await b.addChordset(title: "Z2")
        _ = try await admin.deleteStore("b")
        _ = try await admin.createStore("b")
        let fresh = try await b.execute(.addChordset(AddChordset(title: "new b")))
        #expect(z.sequence == 1 && fresh.sequence == 1)
        // The follower answers each store's reads once it has the events.
        let readerA = try #require(Client(address: follower.address, store: "a"))
        let readerB = try #require(Client(address: follower.address, store: "b"))
        let listA: Chordstore_V1_ChordsetList = try await readerA.call(
            .listChordsets, Chordstore_V1_ListChordsetsRequest(), timeout: .seconds(30), minSequence: x.sequence)
        #expect(listA.chordsets.map(\.title) == ["X"])
        // Between the follower's delete of b and its create of the new b, it has no b.
        #expect(await eventually { (try? follower.store.chordsets(store: "b"))?.map(\.title) == ["new b"] })
        #expect(try await readerB.chordsets().map(\.title) == ["new b"])
        #expect(try follower.store.stores().map(\.name) == leader.store.stores().map(\.name))
        #expect(try follower.store.head() == leader.store.head())
        #expect(try follower.store.verify().isSound)
        // Creating a store through the follower is refused with the leader's address.
        let raw = try await Connection.connect(host: "127.0.0.1", port: Int(follower.address.split(separator: ":")[1])!)
        let refusal = await #expect(throws: ClientError.self) {
            try await raw.call(.createStore, Chordstore_V1_CreateStoreRequest.with { $0.name = "c" }, as: Chordstore_V1_StoreInfo.self)
        }
        #expect(refusal?.leader == leader.address)
        await raw.close()
        for client in [admin, a, b, readerA, readerB] { await client.close() }
    }

    @Test("a read with min_sequence at a follower of a store the leader has not made yet waits for the store, as for its events; a leader answers NOT_FOUND")
    func followerWaitsForAStoreToCome() async throws {
        let (leader, follower, _) = try await Member.startPair()
        defer { Task { await follower.stop(); await leader.stop() } }
        let early = try #require(Client(address: follower.address, store: "later"))
        let waiting = Task {
            let list: Chordstore_V1_ChordsetList = try await early.call(
                .listChordsets, Chordstore_V1_ListChordsetsRequest(), timeout: .seconds(30), minSequence: 1)
            return list.chordsets.map(\.title)
        }
        try await Task.sleep(for: .milliseconds(200))  // the read is waiting at the follower
        let admin = try #require(Client(address: leader.address))
        _ = try await admin.createStore("later")
        let later = try #require(Client(address: leader.address, store: "later"))
        _ = try await later.addChordset(title: "X")
        #expect(try await waiting.value == ["X"])
        let atLeader = try #require(Client(address: leader.address, store: "never"))
        let refused = await #expect(throws: ClientError.self) {
            let _: Chordstore_V1_ChordsetList = try await atLeader.call(
                .listChordsets, Chordstore_V1_ListChordsetsRequest(), timeout: .seconds(5), minSequence: 1)
        }
        #expect(refused?.code == .notFound)
        for client in [early, admin, later, atLeader] { await client.close() }
    }

    @Test("the wait of a read with min_sequence: a store that never comes is NOT_FOUND when the follower's wait ends; a closing store ends it with UNAVAILABLE at once")
    func followerWaitEnds() async throws {
        let (leader, follower, _) = try await Member.startPair()
        defer { Task { await follower.stop(); await leader.stop() } }
        let atFollower = ServiceDispatcher(store: follower.store, node: "follower", replication: follower.node)
        let started = ContinuousClock.now
        let never = await #expect(throws: WireError.self) {
            try await atFollower.waitForSequence(1, store: "never", limit: .milliseconds(300))
        }
        #expect(never?.code == .notFound)
        #expect(ContinuousClock.now - started >= .milliseconds(300))
        let atLeader = ServiceDispatcher(store: leader.store, node: "leader", replication: leader.node)
        let refused = await #expect(throws: WireError.self) { try await atLeader.waitForSequence(1, store: "never", limit: .seconds(30)) }
        #expect(refused?.code == .notFound)

        // A store closing under a wait for an event it will not get ends the wait.
        let alone = ChordStore.inMemory()
        let dispatcher = ServiceDispatcher(store: alone, node: "alone")
        let waiting = Task { () async throws in try await dispatcher.waitForSequence(5, store: StoreName.default, limit: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(100))
        let closing = ContinuousClock.now
        alone.close()
        let ended = await #expect(throws: WireError.self) { try await waiting.value }
        #expect(ended?.code == .unavailable)
        #expect(ContinuousClock.now - closing < .seconds(5))
    }

    @Test("a client given several servers gets past one that accepts connections but never answers (a frozen leader): a health check finds it out, Health names the leader, the write goes there once")
    func clientFindsTheLeaderPastAFrozenServer() async throws {
        let (leader, follower, _) = try await Member.startPair()
        defer { Task { await follower.stop(); await leader.stop() } }
        let frozenPort = try LoopbackPorts.free(1)[0]
        let frozen = try LoopbackListener(port: frozenPort)  // connects, answers nothing
        defer { _ = frozen }
        var patient = Client.RetryPolicy()
        patient.failover = .seconds(60)  // a loaded test machine answers health checks late
        let client = try #require(Client(servers: ["127.0.0.1:\(frozenPort)", follower.address], retry: patient))
        defer { Task { await client.close() } }
        let added = try await client.execute(.addChordset(AddChordset(title: "past the frozen one")), options: WriteOptions(commandID: "frozen-1"))
        #expect(client.address == leader.address)
        #expect(client.knownServers.contains(leader.address))
        #expect(try leader.store.chordsets().map(\.title) == ["past the frozen one"])
        #expect(added.sequence == 1)
        #expect(await client.findLeader(timeout: .seconds(10)) == leader.address)  // a loaded machine answers late
    }

    @Test("without a coordinator the members are the --peer lists: AddMember and RemoveMember are refused, GetClusterStatus lists them")
    func membershipIsFixedWithoutCoordinator() async throws {
        let (leader, follower, _) = try await Member.startPair()
        defer { Task { await follower.stop(); await leader.stop() } }
        let client = try #require(Client(address: leader.address))
        defer { Task { await client.close() } }
        for method in [ChordStoreAPI.Method.addMember, .removeMember] {
            let refused = await #expect(throws: ClientError.self) {
                try await client.call(method, Chordstore_V1_MemberChangeRequest.with { $0.address = "127.0.0.1:9" }, as: Chordstore_V1_ClusterStatus.self)
            }
            #expect(refused?.code == .failedPrecondition && refused?.message.contains("no coordinator") == true)
        }
        // (Whether each member answered within its second is not judged: a loaded test
        // machine may be slower.)
        let status: Chordstore_V1_ClusterStatus = try await client.call(.getClusterStatus, Chordstore_V1_ClusterStatusRequest())
        #expect(!status.coordinated && status.leader == leader.address && status.majority == 2)
        #expect(status.members.first { $0.address == leader.address }?.reachable == true)  // itself, always
        #expect(status.members.map(\.address) == [leader.address, follower.address].sorted())
    }

    @Test("quorum writes wait for the follower; without it they fail at their deadline, local writes do not")
    func quorumWrites() async throws {
        let (leader, follower, _) = try await Member.startPair()
        defer { Task { await leader.stop() } }
        let client = try #require(Client(address: leader.address))
        defer { Task { await client.close() } }
        func add(_ title: String, _ durability: Durability, timeout: Duration = .milliseconds(800)) async throws -> RecordedEvent {
            try await client.execute(.addChordset(AddChordset(title: title)), options: WriteOptions(durability: durability, timeout: timeout))
        }
        // The follower's stream is open once the leader has heard from it.
        #expect(try await eventually { try leader.node.status().followers.contains { $0.streaming } })
        let acknowledged = try await add("on both", .quorum, timeout: .seconds(30))
        // Quorum: the follower holds it when the write returns.
        #expect(try follower.store.head().sequence >= acknowledged.sequence)

        await follower.stop()
        let error = await #expect(throws: ClientError.self) { try await add("leader only", .quorum) }
        #expect(error?.code == .deadlineExceeded)
        _ = try await add("local", .local)
        #expect(try leader.store.chordsets().map(\.title) == ["on both", "leader only", "local"])
    }

    @Test("50 quorum writes in flight at once on one connection, each a registered wait, are all acknowledged once the follower holds them, and leave no wait behind")
    func concurrentQuorumWrites() async throws {
        let (leader, follower, _) = try await Member.startPair()
        defer { Task { await leader.stop() } }
        defer { Task { await follower.stop() } }
        let client = try #require(Client(address: leader.address))
        defer { Task { await client.close() } }
        #expect(try await eventually { try leader.node.status().followers.contains { $0.streaming } })
        let events = try await withThrowingTaskGroup(of: RecordedEvent.self) { group in
            for index in 0..<50 {
                group.addTask {
                    try await client.execute(
                        .addChordset(AddChordset(title: "q\(index)")), options: WriteOptions(durability: .quorum, timeout: .seconds(30)))
                }
            }
            var events: [RecordedEvent] = []
            for try await event in group { events.append(event) }
            return events
        }
        #expect(events.count == 50)
        let last = try #require(events.map(\.sequence).max())
        #expect(try follower.store.head().sequence >= last, "a write was acknowledged before the follower held it")
        #expect(await eventually { leader.node.pendingAcknowledgementWaits == 0 })
    }

    @Test("the follower's acknowledgement sends the next batch at once: quorum writes one after another do not wait out the stream's 1 s flow-control timeout")
    func acknowledgementReleasesTheStream() async throws {
        let (leader, follower, _) = try await Member.startPair()
        defer { Task { await leader.stop() } }
        #expect(try await eventually { try leader.node.status().followers.contains { $0.streaming } })
        let client = try #require(Client(address: leader.address))
        defer { Task { await client.close() } }
        // Each write's batch leaves only once the follower acknowledged the one before: a
        // lost wake-up would end each write's wait by the stream's 1 s timeout instead (10
        // in all). Counted, not timed: a loaded machine makes the writes slow, and may
        // make an acknowledgement later than the timeout now and then.
        let before = leader.node.flowControlTimeoutCount
        for index in 0..<10 {
            _ = try await client.execute(
                .addChordset(AddChordset(title: "w\(index)")), options: WriteOptions(durability: .quorum, timeout: .seconds(30)))
        }
        let timedOut = leader.node.flowControlTimeoutCount - before
        #expect(timedOut < 5, "\(timedOut) of 10 writes' batches waited out the stream's timeout")
        #expect(await eventually { leader.node.pendingAcknowledgementWaits <= 1 }, "only the stream's wait for its next batch may be left")
        #expect(leader.node.followerWaitRegistries == 1)
        await follower.stop()
        #expect(await eventually { leader.node.followerWaitRegistries == 0 }, "the closed stream's registry of waits was kept")
    }

    @Test("a quorum write no majority acknowledges within the quorum timeout fails UNAVAILABLE (NO_QUORUM); the leader goes on")
    func quorumTimeout() async throws {
        let (leader, follower, _) = try await Member.startPair(quorumTimeout: .milliseconds(400))
        defer { Task { await leader.stop() } }
        let client = try #require(Client(address: leader.address))
        defer { Task { await client.close() } }
        #expect(try await eventually { try leader.node.status().followers.contains { $0.streaming } })
        await follower.stop()
        let started = ContinuousClock.now
        let error = await #expect(throws: ClientError.self) {
            try await client.execute(.addChordset(AddChordset(title: "alone")), options: WriteOptions(durability: .quorum, timeout: .seconds(30)))
        }
        #expect(error?.code == .unavailable)
        #expect(error?.reason == .noQuorum)
        #expect(ContinuousClock.now - started < .seconds(20), "the quorum timeout, not the call's deadline, ended it")
        #expect(leader.node.pendingAcknowledgementWaits == 0)
        let local = try await client.execute(.addChordset(AddChordset(title: "local")), options: WriteOptions(durability: .local))
        #expect(local.sequence > 0)
        #expect(try leader.store.chordsets().map(\.title) == ["alone", "local"])
    }

    @Test("a quorum write's wait ends with its call: cut by the call's deadline, or by its client going away, long before the quorum timeout")
    func quorumWaitEndsWithItsCall() async throws {
        let (leader, follower, _) = try await Member.startPair(quorumTimeout: .seconds(60))
        defer { Task { await leader.stop() } }
        #expect(try await eventually { try leader.node.status().followers.contains { $0.streaming } })
        await follower.stop()
        let client = try #require(Client(address: leader.address))
        defer { Task { await client.close() } }
        let error = await #expect(throws: ClientError.self) {
            try await client.execute(.addChordset(AddChordset(title: "cut")), options: WriteOptions(durability: .quorum, timeout: .milliseconds(300)))
        }
        #expect(error?.code == .deadlineExceeded)
        #expect(await eventually { leader.node.pendingAcknowledgementWaits == 0 }, "the deadline left the wait registered")

        let quitter = try #require(Client(address: leader.address))
        let abandoned = Task {
            try await quitter.execute(.addChordset(AddChordset(title: "abandoned")), options: WriteOptions(durability: .quorum, timeout: .seconds(60)))
        }
        #expect(await eventually { leader.node.pendingAcknowledgementWaits == 1 })
        await quitter.close()
        #expect(await eventually { leader.node.pendingAcknowledgementWaits == 0 }, "the closed connection left the wait registered")
        abandoned.cancel()
        _ = await abandoned.result
        #expect(try leader.store.chordsets().map(\.title) == ["cut", "abandoned"])
    }

    @Test("an acknowledgement or a Replicate stream naming a member from another host is refused and counts for nothing")
    func forgedAcknowledgement() async throws {
        let (leader, follower, _) = try await Member.startPair()
        defer { Task { await leader.stop() } }
        #expect(try await eventually { try leader.node.status().followers.contains { $0.streaming } })
        let client = try #require(Client(address: leader.address))
        defer { Task { await client.close() } }
        _ = try await client.addChordset(title: "on both", options: WriteOptions(timeout: .seconds(30)))
        await follower.stop()

        // A process on another address (127.0.0.2) claims to be the follower.
        let forger = try RawClient(port: Int(leader.address.split(separator: ":")[1])!, source: "127.0.0.2")
        try forger.call(1, Method.ackReplication.rawValue, Chordstore_V1_ReplicationAck.with {
            $0.node = "follower"
            $0.address = follower.address
            $0.epoch = leader.store.epoch
            $0.sequence = 1_000_000
        })
        let ack = try await forger.finalStatus(of: 1)?.status
        #expect(ack?.code == StatusCode.permissionDenied.rawValue, "\(String(describing: ack))")
        try forger.call(2, Method.replicate.rawValue, Chordstore_V1_ReplicateRequest.with {
            $0.node = "follower"
            $0.address = follower.address
            $0.epoch = leader.store.epoch + 1
        })
        #expect(try await forger.finalStatus(of: 2)?.status.code == StatusCode.permissionDenied.rawValue)
        #expect(leader.node.role == .leader, "a forged epoch made the leader step down")

        // With the only real follower down, a quorum write cannot complete.
        let error = await #expect(throws: ClientError.self) {
            _ = try await client.addChordset(title: "needs the follower", options: WriteOptions(durability: .quorum, timeout: .milliseconds(800)))
        }
        #expect(error?.code == .deadlineExceeded)
    }

    @Test("a follower replaced at its address by one with an empty log, or one whose stream is refused as diverged, counts for what its log holds: its old acknowledged position is dropped")
    func replacedFollowerCountsForItsLog() async throws {
        let (leader, follower, _) = try await Member.startPair()
        defer { Task { await leader.stop() } }
        #expect(try await eventually { try leader.node.status().followers.contains { $0.streaming } })
        let client = try #require(Client(address: leader.address))
        defer { Task { await client.close() } }
        for index in 0..<3 {
            _ = try await client.addChordset(title: "w\(index)", options: WriteOptions(durability: .quorum, timeout: .seconds(30)))
        }
        func acked() throws -> UInt64? { try leader.node.status().followers.first { $0.address == follower.address }?.ackedSequence }
        #expect(try acked() == 3)
        await follower.stop()

        // Its replacement (same address and host, nothing logged) opens a stream from the
        // start, and acknowledges nothing.
        let replacement = try RawClient(port: Int(leader.address.split(separator: ":")[1])!)
        try replacement.call(1, Method.replicate.rawValue, Chordstore_V1_ReplicateRequest.with {
            $0.node = "follower"
            $0.address = follower.address
            $0.epoch = leader.store.epoch
            $0.fromSequence = LogPosition.start.sequence + 1
            $0.previousEpoch = LogPosition.start.epoch
            $0.previousChecksum = LogPosition.start.checksum
        })
        #expect(try await eventually { try acked() == 0 }, "the replaced follower's position still counted")
        let quorum = try leader.node.status().quorumSequence
        #expect(quorum == 0, "a majority was taken to hold \(quorum) events")

        // It acknowledges 2 events, then a stream of a log that differs at its third is
        // refused: how much of that log is the leader's is not known.
        try replacement.call(2, Method.ackReplication.rawValue, Chordstore_V1_ReplicationAck.with {
            $0.node = "follower"
            $0.address = follower.address
            $0.epoch = leader.store.epoch
            $0.sequence = 2
        })
        #expect(try await replacement.finalStatus(of: 2)?.status.code == StatusCode.ok.rawValue)
        #expect(try acked() == 2)
        let third = try #require(try leader.store.position(at: 3))
        try replacement.call(3, Method.replicate.rawValue, Chordstore_V1_ReplicateRequest.with {
            $0.node = "follower"
            $0.address = follower.address
            $0.epoch = leader.store.epoch
            $0.fromSequence = 4
            $0.previousEpoch = third.epoch
            $0.previousChecksum = third.checksum &+ 1
        })
        #expect(try await replacement.finalStatus(of: 3)?.status.code == StatusCode.failedPrecondition.rawValue)
        #expect(try acked() == 0, "the diverged follower's position still counted")
    }

    @Test("Fence with an impossible epoch is refused; at the largest epoch Promote is refused, and the node stays up")
    func impossibleEpochs() async throws {
        let (leader, follower, followerPort) = try await Member.startPair()
        defer { Task { await follower.stop(); await leader.stop() } }
        let raw = try await Connection.connect(host: "127.0.0.1", port: followerPort)
        defer { Task { await raw.close() } }
        let tooLarge = await #expect(throws: ClientError.self) {
            let _: Chordstore_V1_NodeStatus = try await raw.call(.fence, Chordstore_V1_FenceRequest.with {
                $0.epoch = .max
                $0.leader = "127.0.0.1:1"
            })
        }
        #expect(tooLarge?.code == .invalidArgument)
        let fenced: Chordstore_V1_NodeStatus = try await raw.call(.fence, Chordstore_V1_FenceRequest.with {
            $0.epoch = LogPosition.maxEpoch
            $0.leader = "127.0.0.1:1"
        })
        #expect(fenced.epoch == LogPosition.maxEpoch)
        let promotion = await #expect(throws: ClientError.self) {
            let _: Chordstore_V1_NodeStatus = try await raw.call(.promote, Chordstore_V1_PromoteRequest.with { $0.force = true })
        }
        #expect(promotion?.code == .failedPrecondition)
        #expect(promotion?.message.contains("no epoch is left") == true)
        let status: Chordstore_V1_NodeStatus = try await raw.call(.getNodeStatus, Chordstore_V1_NodeStatusRequest())
        #expect(status.epoch == LogPosition.maxEpoch)
    }
}

