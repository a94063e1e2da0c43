import ChordStoreAPI
@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf
import TestSupport
import Testing

/// The change feed: catch-up then live, in order, once each; slow readers cut and resumed.
@Suite("Change feed")
struct SubscriptionTests {
    /// Collects events from `subscription` until one with sequence `last` (or 60 s).
    static func collect(_ subscription: EventSubscription, through last: UInt64) async throws -> [Chordstore_V1_EventEnvelope] {
        try await withThrowingTaskGroup(of: [Chordstore_V1_EventEnvelope].self) { group in
            group.addTask {
                var events: [Chordstore_V1_EventEnvelope] = []
                for try await event in subscription {
                    events.append(event)
                    if event.sequence >= last { break }
                }
                return events
            }
            group.addTask {
                try await Task.sleep(for: .seconds(60))
                throw ClientError(.deadlineExceeded, "the subscription did not reach event \(last) in 60 s")
            }
            let events = try await group.next() ?? []
            group.cancelAll()
            return events
        }
    }

    @Test("a subscriber starting mid-stream gets every event once, in order, across the catch-up/live handover, while 4 writers write")
    func handover() async throws {
        let server = try await TestServer.start(durable: true)
        defer { Task { await server.stop() } }
        for i in 0..<300 { _ = try await server.store.add("before \(i)") }
        let client = Client(host: "127.0.0.1", port: server.port)
        defer { Task { await client.close() } }

        let writers = 4, perWriter = 250
        let last = UInt64(300 + writers * perWriter)
        async let received = Self.collect(client.subscribe(from: 150), through: last)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    let connection = Client(host: "127.0.0.1", port: server.port)
                    for i in 0..<perWriter {
                        _ = try await connection.execute(.addChordset(AddChordset(title: "w\(writer)-\(i)")))
                    }
                    await connection.close()
                }
            }
            try await group.waitForAll()
        }
        let events = try await received
        #expect(events.map(\.sequence) == Array(150...last))
        let stored = try server.store.events(from: 150, limit: Int(last))
        #expect(events.map { try? RecordedEvent(envelope: $0) } == stored.map { Optional($0) })
    }

    @Test("filters: one chordset's events and some kinds; from now skips the past")
    func filters() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = Client(host: "127.0.0.1", port: server.port)
        defer { Task { await client.close() } }
        let a = try await server.store.add("a")
        let b = try await server.store.add("b")
        try await server.store.execute(.renameChordset(id: a.id, title: "a2"))
        try await server.store.execute(.renameChordset(id: b.id, title: "b2"))
        let head = try server.store.lastSequence()
        async let onlyA = Self.collect(client.subscribe(chordsetID: a.id.protoBytes), through: head + 2)
        async let renames = Self.collect(client.subscribe(kinds: ["chordset_renamed"]), through: head + 1)
        async let fromNow = Self.collect(client.subscribe(fromNow: true), through: head + 2)
        // Write only once the three streams run (so "from now" has pinned its position).
        let deadline = ContinuousClock.now + .seconds(30)
        while server.server.callsInFlight < 3, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        try await server.store.execute(.renameChordset(id: a.id, title: "a3"))
        try await server.store.execute(.deleteAll)
        #expect(try await onlyA.map(\.sequence) == [1, 3, head + 1, head + 2])
        #expect(try await renames.map(\.sequence) == [3, 4, head + 1])
        #expect(try await fromNow.map(\.sequence) == [head + 1, head + 2])
    }

    @Test("an unknown event kind is refused, not silently matched by nothing")
    func unknownKind() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = Client(host: "127.0.0.1", port: server.port)
        defer { Task { await client.close() } }
        do {
            for try await _ in client.subscribe(kinds: ["chordset_renamd"], maxRetries: 0) {}
            Issue.record("a subscription with an unknown kind was accepted")
        } catch let error as ClientError {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("chordset_renamed"))
        }
        #expect(Event.kindNames.count == 9)
    }

    @Test("a subscriber that stops reading is cut off with RESOURCE_EXHAUSTED while writes go on, and resumes from its position")
    func slowSubscriber() async throws {
        var limits = WireLimits()
        limits.maxStreamBacklog = 64 << 10
        limits.slowReaderTimeout = .milliseconds(300)
        let server = try await TestServer.start(limits: limits)
        defer { Task { await server.stop() } }
        let reader = try RawClient(port: server.port, receiveBuffer: 65_536)
        try reader.call(1, Method.subscribe.rawValue, Chordstore_V1_SubscribeRequest.with { $0.fromSequence = 1 })

        // Writes go on (and are acknowledged) while the subscriber reads nothing.
        var acknowledged = 0
        let start = ContinuousClock.now
        while server.server.slowReadersCut < 1, ContinuousClock.now - start < .seconds(60) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<500 { group.addTask { _ = try await server.store.execute(.addChordset(AddChordset(title: "c\(i)"))) } }
                try await group.waitForAll()
            }
            acknowledged += 500
        }
        #expect(server.server.slowReadersCut == 1)
        // More writes after the cut: the subscriber has events to resume with.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<500 { group.addTask { _ = try await server.store.execute(.addChordset(AddChordset(title: "after \(i)"))) } }
            try await group.waitForAll()
        }
        acknowledged += 500
        let ended = try await reader.finalStatus(of: 1)
        #expect(ended?.status.code == StatusCode.resourceExhausted.rawValue, "\(ended?.status.message ?? "no status")")
        let seen = UInt64(ended?.messages ?? 0)
        #expect(seen > 0 && seen < UInt64(acknowledged))

        // It resumes from the next sequence and gets the rest, once each.
        let head = try server.store.lastSequence()
        #expect(head == UInt64(acknowledged))
        let client = Client(host: "127.0.0.1", port: server.port)
        defer { Task { await client.close() } }
        let rest = try await Self.collect(client.subscribe(from: seen + 1), through: head)
        #expect(rest.map(\.sequence) == Array((seen + 1)...head))
    }

    @Test("a Swift client that stops pulling makes the server cut its stream: the client buffers a bounded number of replies")
    func clientBackpressure() async throws {
        var limits = WireLimits()
        limits.maxStreamBacklog = 64 << 10
        limits.slowReaderTimeout = .milliseconds(300)
        let server = try await TestServer.start(limits: limits)
        defer { Task { await server.stop() } }
        try await server.store.fill(20_000)
        let connection = try await server.connect()
        defer { Task { await connection.close() } }
        var events = try await connection.stream(.subscribe, Chordstore_V1_SubscribeRequest.with { $0.fromSequence = 1 }, as: Chordstore_V1_EventEnvelope.self)
            .makeAsyncIterator()
        #expect(try await events.next()?.sequence == 1)
        // Pull nothing more: the connection stops reading, the server's buffer fills,
        // and it cuts the stream.
        let start = ContinuousClock.now
        while server.server.slowReadersCut < 1, ContinuousClock.now - start < .seconds(60) {
            try await Task.sleep(for: .milliseconds(20))
        }
        try #require(server.server.slowReadersCut == 1, "the server never saw the client fall behind")
        // What the client buffered is delivered, then the status.
        var received: UInt64 = 1
        do {
            while let event = try await events.next() {
                #expect(event.sequence == received + 1)
                received = event.sequence
            }
            Issue.record("the stream ended without the server's status")
        } catch let error as ClientError {
            #expect(error.code == .resourceExhausted)
        }
        #expect(received < 20_000, "the client read the whole log into memory")
    }

    @Test("a subscription outlives a lost connection: the client library subscribes again by itself")
    func resubscribesAfterLostConnection() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        // The proxy cuts the first connection (the subscription's) after its first bytes.
        let proxy = try DroppingProxy(targetPort: server.port)
        defer { proxy.stop() }
        let client = Client(host: "127.0.0.1", port: proxy.port)
        defer { Task { await client.close() } }
        for i in 0..<50 { _ = try await server.store.add("c\(i)") }
        async let events = Self.collect(client.subscribe(from: 1), through: 100)
        for i in 50..<100 { _ = try await server.store.add("c\(i)") }
        #expect(try await events.map(\.sequence) == Array(1...100))
        #expect(proxy.accepted >= 2)
    }
}
