import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
@testable import ChordStoreReplica
import ChordStoreServer
import Foundation
import Logging
import Observation
import Synchronization
import TestSupport
import Testing

/// The SwiftUI binding (``ObservedReplica``), observed as SwiftUI observes it
/// (`withObservationTracking`, which the Linux toolchain has), and the replica's reads,
/// which never wait behind the sync.
@Suite("Observed replicas")
@MainActor
struct ObservedReplicaTests {
    /// Waits, woken by Observation (never polling), until `predicate` holds; `false` after
    /// `timeout`. Its default is long: a passing test never waits for it, and in the full
    /// suite the two cores' task threads can be taken by other tests for many seconds.
    static func until(_ timeout: Duration = .seconds(60), _ predicate: @escaping @MainActor () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !predicate() {
            let (changes, change) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            withObservationTracking { _ = predicate() } onChange: { change.yield() }
            if predicate() { return true }  // changed between the check and the tracking
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { return false }
            await Replica.sleep(for: remaining, orUntil: changes)
            if ContinuousClock.now >= deadline { return predicate() }
        }
        return true
    }

    static func model(_ replica: Replica, network: AsyncStream<Bool> = AsyncStream { _ in }) -> ObservedReplica {
        ObservedReplica(replica, query: ChordsetQuery(order: .title, limit: 100), networkChanges: network)
    }

    @Test("a view's model follows local writes as Observation reports them, and keeps a refused write's error")
    func localWrites() async throws {
        let replica = try await Replica.open(at: ReplicaSyncTests.directory(), store: "default")
        defer { replica.close() }
        let model = Self.model(replica)
        defer { model.close() }
        let (changes, change) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        withObservationTracking { _ = model.chordsets } onChange: { change.yield() }
        let verse = try #require(model.add(AddChordset(title: "Verse")))
        await Replica.sleep(for: .seconds(20), orUntil: changes)
        #expect(await Self.until { model.chordsets.map(\.id) == [verse.id] }, "\(model.chordsets)")
        #expect(model.pendingCount == 1 && model.lastError == nil)

        model.add(AddChordset(title: "Bridge"))
        model.rename(verse.id, to: "Chorus")
        #expect(await Self.until { model.chordsets.map(\.title) == ["Bridge", "Chorus"] }, "in title order: \(model.chordsets.map(\.title))")
        model.rename(UUID(), to: "Nowhere")
        #expect(model.lastError?.code == .notFound, "\(String(describing: model.lastError))")
        model.undo()
        #expect(model.lastError == nil)
        #expect(await Self.until { model.chordsets.map(\.title) == ["Bridge", "Verse"] })

        // Another query restarts the live query.
        model.query = ChordsetQuery(title: (.prefix, "V"), limit: 10)
        #expect(await Self.until { model.chordsets.map(\.title) == ["Verse"] })
    }

    @Test("the model shows the sync (up to date, pending drops to 0, a refusal kept for the user), pauses in the background and resumes when active")
    func syncAndPhases() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = ReplicaSyncTests.client(server)
        let replica = try await Replica.open(at: ReplicaSyncTests.directory(), store: "default")
        defer { replica.close() }
        let model = Self.model(replica)
        defer { model.close() }
        let verse = try #require(model.add(AddChordset(title: "Verse")))
        model.startSync(with: client)
        #expect(await Self.until { model.pendingCount == 0 && model.status == .upToDate(lastSequence: 1) }, "\(model.status)")
        #expect(try server.store.chordset(verse.id)?.title == "Verse")

        // In the background the sync stops: a write stays on the device.
        model.setPhase(.background)
        #expect(await Self.until { if case .offline = model.status { true } else { false } }, "\(model.status)")
        _ = try await server.store.execute(.deleteChordset(id: verse.id))
        model.rename(verse.id, to: "Renamed offline")
        #expect(model.pendingCount == 1 && model.lastError == nil, "the device has not seen the delete")
        // Active again: the write goes, the server refuses it (deleted meanwhile), and the
        // model keeps the refusal for the user.
        model.setPhase(.active)
        #expect(await Self.until { model.rejections.count == 1 }, "\(model.status)")
        #expect(model.rejections.first?.reason == .chordsetNotFound)
        #expect(await Self.until { model.pendingCount == 0 && model.chordsets.isEmpty })
        model.dismissRejections()
        #expect(model.rejections.isEmpty)
    }

    @Test("a sync waiting to retry an unreachable server tries at once when the network comes back")
    func networkReturns() async throws {
        let port = try LoopbackPorts.free(1)[0]
        let (network, reachable) = AsyncStream<Bool>.makeStream()
        var options = Replica.Options()
        options.retryFirst = .seconds(60)  // without the signal, the next try is 45 s or more away
        let replica = try await Replica.open(at: ReplicaSyncTests.directory(), store: "default", options: options)
        defer { replica.close() }
        let model = Self.model(replica, network: network)
        defer { model.close() }
        model.add(AddChordset(title: "Made offline"))
        model.startSync(with: Client(host: "127.0.0.1", port: port, retry: .once, store: "", credentials: ClientCredentials(token: nil)))
        #expect(await Self.until { if case .offline(_, _, let reason) = model.status { reason != "not syncing" } else { false } }, "\(model.status)")

        var logger = Logger(label: "test-server")
        logger.logLevel = .critical
        let store = ChordStore.inMemory()
        let server = Server(store: store, limits: .init(), node: "test-node", security: .loopbackOnly, logger: logger, threads: 1)
        _ = try await server.start(host: "127.0.0.1", port: port)
        defer { Task { await server.shutdown(grace: .seconds(2)); store.close() } }
        let back = ContinuousClock.now
        reachable.yield(true)
        #expect(await Self.until(.seconds(15)) { model.status == .upToDate(lastSequence: 1) }, "\(model.status)")
        #expect(ContinuousClock.now - back < .seconds(15))
        #expect(try store.count(ChordsetQuery()).count == 1)
    }

    @Test("reads answer while a pull holds the replica's lock for a batch (stopped between its fold and its commit), with every local write")
    nonisolated func readsDoNotWait() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = ReplicaSyncTests.client(server)
        let replica = try await Replica.open(at: ReplicaSyncTests.directory(), store: "default")
        defer { replica.close() }
        _ = try await replica.sync(with: client)  // the store's id is recorded: the next sync only pulls
        let verse = try replica.addChordset(AddChordset(title: "Verse"))
        _ = try await replica.sync(with: client)
        let local = try replica.addChordset(AddChordset(title: "Made just now"))
        try await server.store.fill(50)

        // The pull's batch takes the replica's lock, folds, and waits before storing the
        // events until the reads are done.
        let (inBatch, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        replica.storage.beforeStoringEvents.withLock {
            $0 = {
                inBatch.signal()
                release.wait()
            }
        }
        let syncing = Task { try await replica.sync(with: client) }
        // The waits block threads of their own, not the two of the task pool the pull needs.
        #expect(try await offPool { inBatch.wait(timeout: .now() + 20) } == .success, "the pull did not reach its batch")
        replica.storage.beforeStoringEvents.withLock { $0 = nil }
        let answered = DispatchSemaphore(value: 0)
        let seen = Mutex<[String]>([])
        Thread {
            let titles = ((try? replica.chordsets())?.chordsets ?? []).map(\.title)
            if replica.chordset(verse.id) != nil, replica.chordset(local.id) != nil, (try? replica.count()) != nil,
               !replica.pendingWrites.isEmpty, replica.lastSequence > 0 {
                seen.withLock { $0 = titles }
                answered.signal()
            }
        }.start()
        let waited = try await offPool { answered.wait(timeout: .now() + 5) }
        release.signal()
        #expect(waited == .success, "a read waited for the pull's batch, or missed a write")
        #expect(seen.withLock { $0 } == ["Verse", "Made just now"], "the view before the batch, with the local write")
        _ = try await syncing.value
        #expect(try replica.count() == 52)
    }

    @Test("starting the sync twice at once, or going to the background and back at once, leaves one sync running")
    func startTwice() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let replica = try await Replica.open(at: ReplicaSyncTests.directory(), store: "default")
        defer { replica.close() }
        let model = Self.model(replica)
        defer { model.close() }
        model.startSync(with: ReplicaSyncTests.client(server))
        model.startSync(with: ReplicaSyncTests.client(server))
        #expect(await Self.until { model.status == .upToDate(lastSequence: 0) }, "\(model.status)")
        model.add(AddChordset(title: "After the restart"))
        #expect(await Self.until { model.pendingCount == 0 && model.status == .upToDate(lastSequence: 1) }, "\(model.status)")
        for _ in 0..<20 {
            model.setPhase(.background)
            model.setPhase(.active)
        }
        model.add(AddChordset(title: "After the phases"))
        #expect(await Self.until { model.pendingCount == 0 && model.status == .upToDate(lastSequence: 2) }, "\(model.status)")
    }

    @Test("the pending count ends as the replica's when a list update made before a confirmation reaches the model after the status that followed it")
    func pendingCountAfterLateListUpdate() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let replica = try await Replica.open(at: ReplicaSyncTests.directory(), store: "default")
        defer { replica.close() }
        let model = Self.model(replica)
        defer { model.close() }
        let intro = try #require(model.add(AddChordset(title: "Intro")))
        #expect(await Self.until { model.chordsets.map(\.id) == [intro.id] }, "the live query's first updates arrived")

        // The live query's update for the next write, made while it is pending, is held
        // until the sync has confirmed both writes and the model has shown that status.
        let (released, release) = AsyncStream<Void>.makeStream()
        replica.beforeLiveUpdate.withLock { $0 = { _ = await released.first { true } } }
        let verse = try #require(model.add(AddChordset(title: "Verse")))
        _ = try await replica.sync(with: ReplicaSyncTests.client(server))
        #expect(await Self.until { model.status == .upToDate(lastSequence: 2) }, "\(model.status)")
        release.finish()  // every update held goes
        #expect(await Self.until { model.chordsets.map(\.id) == [intro.id, verse.id] }, "\(model.chordsets)")
        #expect(model.pendingCount == 0, "the held update's count (2) was kept")
    }

    @Test("a closed replica's model shows it closed")
    func closed() async throws {
        let replica = try await Replica.open(at: ReplicaSyncTests.directory(), store: "default")
        let model = Self.model(replica)
        defer { model.close() }
        replica.close()
        #expect(await Self.until { if case .offline(_, _, "closed") = model.status { true } else { false } }, "\(model.status)")
    }
}
