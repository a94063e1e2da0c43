import ChordStoreAPI
@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf
import TestSupport
import Testing

/// Bad input and resource limits: the offending connection gets a status (or is closed),
/// and the server keeps serving everyone else.
@Suite("Server limits and bad input")
struct ServerLimitTests {
    /// A well-behaved client still gets answers.
    private func stillServes(_ server: TestServer) async throws {
        let client = try await server.connect()
        let profile: Chordstore_V1_Profile = try await client.call(.getProfile, Chordstore_V1_GetProfileRequest())
        #expect(profile.chords == profile.chordsets * 8 + (profile.controlsChordPresent ? 1 : 0))
        await client.close()
    }

    @Test("garbage bytes, a huge length prefix and a frame that is not a Frame each close only their connection")
    func badFraming() async throws {
        var limits = WireLimits()
        limits.maxFrameSize = 1_000
        // Not under test here: long enough that a loaded CI machine never closes the
        // bystander for its first frame's delay.
        limits.handshakeTimeout = .seconds(120)
        let server = try await TestServer.start(limits: limits)
        defer { Task { await server.stop() } }
        let bystander = try await server.connect()

        let huge = try RawClient(port: server.port)
        huge.send([0x7F, 0xFF, 0xFF, 0xFF])
        let hugeGoAway = try await huge.readUntilClosed()
        #expect(hugeGoAway?.status.code == StatusCode.resourceExhausted.rawValue)
        #expect(hugeGoAway?.status.message.contains("exceeds the limit of 1000 bytes") == true)
        #expect(hugeGoAway?.status.reason == "FRAME_TOO_LARGE" && hugeGoAway?.maxFrameSize == 1_000, "the reason and the limit, for a client to tell which call never fits")

        let garbage = try RawClient(port: server.port)
        garbage.send([0, 0, 0, 5, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(try await garbage.readUntilClosed()?.status.code == StatusCode.invalidArgument.rawValue)

        let wrongDirection = try RawClient(port: server.port)
        var reply = Chordstore_V1_Frame()
        reply.reply = .with { $0.callID = 1 }
        try wrongDirection.send(reply)
        #expect(try await wrongDirection.readUntilClosed()?.status.code == StatusCode.invalidArgument.rawValue)

        let truncated = try RawClient(port: server.port)
        truncated.send([0, 0, 0, 50, 1, 2, 3])
        _ = truncated

        let profile: Chordstore_V1_Profile = try await bystander.call(.getProfile, Chordstore_V1_GetProfileRequest())
        #expect(profile.lastSequence == 0)
        await bystander.close()
        try await stillServes(server)
    }

    @Test("a frame trickled slower than the frame timeout is cut off with DEADLINE_EXCEEDED")
    func slowFrame() async throws {
        var limits = WireLimits()
        limits.frameTimeout = .milliseconds(200)
        let server = try await TestServer.start(limits: limits)
        defer { Task { await server.stop() } }
        let slow = try RawClient(port: server.port)
        slow.send([0, 0])
        let goAway = try await slow.readUntilClosed()
        #expect(goAway?.status.code == StatusCode.deadlineExceeded.rawValue)
        try await stillServes(server)
    }

    @Test("an idle connection is closed with UNAVAILABLE")
    func idle() async throws {
        var limits = WireLimits()
        limits.idleTimeout = .seconds(1)
        let server = try await TestServer.start(limits: limits)
        defer { Task { await server.stop() } }
        let idle = try RawClient(port: server.port)
        #expect(try await idle.readUntilClosed()?.status.code == StatusCode.unavailable.rawValue)
    }

    @Test("connections over the limit are closed at once; those within it work")
    func connectionLimit() async throws {
        var limits = WireLimits()
        limits.maxConnections = 2
        let server = try await TestServer.start(limits: limits)
        defer { Task { await server.stop() } }
        let first = try RawClient(port: server.port)
        let second = try RawClient(port: server.port)
        try await Task.sleep(for: .milliseconds(100))
        let third = try RawClient(port: server.port)
        #expect(try await third.readUntilClosed() == nil)
        try first.call(1, Method.getProfile.rawValue, Chordstore_V1_GetProfileRequest())
        #expect(try await first.finalStatus(of: 1)?.status.code == 0)
        _ = second
    }

    @Test("calls beyond the per-connection limit are refused with RESOURCE_EXHAUSTED, and a slow stream reader is ended with it")
    func callLimitAndSlowReader() async throws {
        var limits = WireLimits()
        limits.maxCallsPerConnection = 2
        limits.maxStreamBacklog = 64 << 10
        limits.slowReaderTimeout = .milliseconds(300)
        let server = try await TestServer.start(limits: limits)
        defer { Task { await server.stop() } }
        try await server.store.fill(20_000)
        let reader = try RawClient(port: server.port, receiveBuffer: 65_536)
        for id: UInt64 in 1...3 {
            try reader.call(id, Method.readLog.rawValue, Chordstore_V1_ReadLogRequest())
        }
        // Read nothing until the server has cut off the two streams (however slowly a
        // loaded machine runs them), then everything.
        let early = try await reader.waitForFirstMessage(of: 1)
        let start = ContinuousClock.now
        while server.server.slowReadersCut < 2, ContinuousClock.now - start < .seconds(60) {
            try await Task.sleep(for: .milliseconds(20))
        }
        var third = early[3]
        if third == nil { third = try await reader.finalStatus(of: 3)?.status }
        #expect(third?.code == StatusCode.resourceExhausted.rawValue)
        #expect(third?.message.contains("calls are in flight") == true)
        let first = try await reader.finalStatus(of: 1)
        #expect(first?.status.code == StatusCode.resourceExhausted.rawValue, "after \(first?.messages ?? -1) messages: \(first?.status.message ?? "")")
        #expect(first?.status.message.contains("did not read its stream") == true)
        try await stillServes(server)
    }

    @Test("a stream whose client stops reading waits for it, and is woken to go on as soon as the client reads again")
    func streamResumesWhenTheSocketDrains() async throws {
        var limits = WireLimits()
        limits.maxStreamBacklog = 64 << 10
        limits.slowReaderTimeout = .seconds(30)  // only a lost wake-up waits this long
        let server = try await TestServer.start(limits: limits)
        defer { Task { await server.stop() } }
        try await server.store.fill(20_000)
        // A small receive window: the log's 20,000 records (megabytes) cannot all wait in
        // the kernel's buffers, so the stream must wait for the client.
        let reader = try RawClient(port: server.port, receiveBuffer: 4_096)
        try reader.call(1, Method.readLog.rawValue, Chordstore_V1_ReadLogRequest())
        let start = ContinuousClock.now
        while server.server.streamSocketWaits == 0, ContinuousClock.now - start < .seconds(60) {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(server.server.streamSocketWaits > 0, "the stream never waited for its client")
        try await Task.sleep(for: .milliseconds(300))
        let reading = ContinuousClock.now
        let final = try await reader.finalStatus(of: 1)
        #expect(final?.status.code == StatusCode.ok.rawValue, "\(final?.status.message ?? "no status")")
        #expect(final?.messages == 20_000)
        #expect(server.server.slowReadersCut == 0)
        #expect(ContinuousClock.now - reading < .seconds(25), "the stream went on only when its slow-reader timer fired")
    }

    // MARK: Lock-outs

    /// Opens `count` connections from `source` that send nothing.
    private func idleConnections(_ count: Int, from source: String, port: Int) throws -> [RawClient] {
        try (0..<count).map { _ in try RawClient(port: port, source: source) }
    }

    @Test("idle connections from a few addresses cannot lock out a client from another: per-address limit and reserve")
    func connectionLockOut() async throws {
        var limits = WireLimits()
        limits.maxConnections = 32
        limits.maxConnectionsPerAddress = 8
        let server = try await TestServer.start(limits: limits)
        defer { Task { await server.stop() } }
        var attackers: [RawClient] = []
        for host in 2...5 { attackers += try idleConnections(8, from: "127.0.0.\(host)", port: server.port) }
        // One more from a full address is closed at once.
        let extra = try RawClient(port: server.port, source: "127.0.0.2")
        #expect(try await extra.readUntilClosed() == nil)
        #expect(server.server.openConnections <= 30)
        // Clients from addresses that hold no connection are still served.
        try await stillServes(server)
        let other = try RawClient(port: server.port, source: "127.0.1.9")
        try other.call(1, Method.getProfile.rawValue, Chordstore_V1_GetProfileRequest())
        #expect(try await other.finalStatus(of: 1)?.status.code == 0)
        _ = attackers
    }

    @Test("a connection that completes no frame within the handshake timeout is closed with DEADLINE_EXCEEDED")
    func handshakeTimeout() async throws {
        var limits = WireLimits()
        limits.handshakeTimeout = .milliseconds(300)
        let server = try await TestServer.start(limits: limits)
        defer { Task { await server.stop() } }
        let silent = try RawClient(port: server.port)
        let goAway = try await silent.readUntilClosed()
        #expect(goAway?.status.code == StatusCode.deadlineExceeded.rawValue)
        #expect(goAway?.status.message.contains("handshake") == true)
        // A client that calls at once is not affected, however long it stays afterwards.
        let prompt = try RawClient(port: server.port)
        try prompt.call(1, Method.getProfile.rawValue, Chordstore_V1_GetProfileRequest())
        #expect(try await prompt.finalStatus(of: 1)?.status.code == 0)
        try await Task.sleep(for: .milliseconds(600))
        try prompt.call(2, Method.getProfile.rawValue, Chordstore_V1_GetProfileRequest())
        #expect(try await prompt.finalStatus(of: 2)?.status.code == 0)
    }

    @Test("partial frames beyond the buffered-bytes budget are refused with RESOURCE_EXHAUSTED; closing gives the budget back")
    func bufferedBytesBudget() async throws {
        var limits = WireLimits()
        limits.maxBufferedBytes = 2 << 20
        // Not under test here: the stalled partial frames must hold their budget however
        // slowly a loaded machine runs the test.
        limits.handshakeTimeout = .seconds(120)
        limits.frameTimeout = .seconds(120)
        let server = try await TestServer.start(limits: limits)
        defer { Task { await server.stop() } }
        let megabyte = UInt32(1 << 20)
        let prefix = withUnsafeBytes(of: megabyte.bigEndian) { Array($0) }
        let stalled = try (0..<2).map { _ in try RawClient(port: server.port) }
        for client in stalled { client.send(prefix + [0x0A, 0x05]) }
        #expect(await eventually { server.server.bufferedBytes == 2 << 20 }, "the partial frames hold \(server.server.bufferedBytes) bytes")
        let refused = try RawClient(port: server.port)
        refused.send(prefix)
        let goAway = try await refused.readUntilClosed()
        #expect(goAway?.status.code == StatusCode.resourceExhausted.rawValue)
        #expect(goAway?.status.message.contains("budget") == true)
        // Small frames are never refused for the budget.
        try await stillServes(server)
        // The budget comes back when a stalled connection goes; a large frame then fits.
        stalled[0].finishSending()
        _ = try await stalled[0].readUntilClosed()
        #expect(await eventually { server.server.bufferedBytes == 1 << 20 }, "\(server.server.bufferedBytes) bytes still held")
        let large = try RawClient(port: server.port)
        var frame = Chordstore_V1_Frame()
        frame.call = .with {
            $0.callID = 1
            $0.method = Method.getProfile.rawValue
            $0.metadata = ["padding": String(repeating: "x", count: (1 << 20) - 1_000)]
        }
        try large.send(frame)
        #expect(try await large.finalStatus(of: 1)?.status.code == 0)
        _ = stalled
    }

    @Test("a frame stalled half-way is cut by the frame timeout, not by a shorter idle timeout")
    func frameTimeoutOverIdle() async throws {
        var limits = WireLimits()
        limits.idleTimeout = .seconds(1)
        limits.frameTimeout = .seconds(4)
        let server = try await TestServer.start(limits: limits)
        defer { Task { await server.stop() } }
        let start = ContinuousClock.now
        let client = try RawClient(port: server.port)
        client.send([0, 0, 0, 50, 1, 2, 3])
        let goAway = try await client.readUntilClosed()
        #expect(goAway?.status.code == StatusCode.deadlineExceeded.rawValue, "\(String(describing: goAway))")
        #expect(goAway?.status.message.contains("a frame took longer") == true)
        #expect(ContinuousClock.now - start >= .milliseconds(3_500))
    }

    @Test("a cancelled stream's slot is free once its CANCELLED reply is sent: a call right behind the Cancels is taken (50 rounds at the limit)")
    func slotFreedBeforeReply() async throws {
        var limits = WireLimits()
        limits.maxCallsPerConnection = 4
        let server = try await TestServer.start(limits: limits)
        defer { Task { await server.stop() } }
        let client = try RawClient(port: server.port)
        var next: UInt64 = 1
        for round in 0..<50 {
            let streams = (next..<next + 4).map { $0 }
            let probe = next + 4
            next += 5
            try client.send(streams.map { id in
                var frame = Chordstore_V1_Frame()
                frame.call = .with {
                    $0.callID = id
                    $0.method = Method.subscribe.rawValue
                    $0.payload = try! Chordstore_V1_SubscribeRequest.with { $0.fromNow = true }.serializedData()
                }
                return frame
            })
            // The Cancels and the next call in one write: the server reads them together,
            // so the call comes before any stream task has wound down.
            var call = Chordstore_V1_Frame()
            call.call = .with {
                $0.callID = probe
                $0.method = Method.getProfile.rawValue
            }
            try client.send(streams.map { id in
                var frame = Chordstore_V1_Frame()
                frame.cancel = .with { $0.callID = id }
                return frame
            } + [call])
            for id in streams {
                let status = try await client.finalStatus(of: id)?.status
                #expect(status?.code == StatusCode.cancelled.rawValue, "round \(round), call \(id): \(String(describing: status))")
            }
            let status = try await client.finalStatus(of: probe)?.status
            guard status?.code == 0 else {
                Issue.record("round \(round): the call after four Cancels got \(String(describing: status))")
                return
            }
        }
    }

    @Test("a live query whose client reads nothing is ended with RESOURCE_EXHAUSTED even when nothing more is sent")
    func idleSlowWatcher() async throws {
        var limits = WireLimits()
        limits.slowReaderTimeout = .seconds(1)
        let server = try await TestServer.start(limits: limits)
        defer { Task { await server.stop() } }
        for i in 0..<400 { _ = try await server.store.add("a title to fill the window \(i)") }
        let watcher = try RawClient(port: server.port, receiveBuffer: 4_096)
        try watcher.call(1, Method.watchQuery.rawValue, Chordstore_V1_QueryRequest.with { $0.limit = 400 })
        // No commit follows: the query has nothing more to send, and its first message
        // waits, unread, in the socket.
        #expect(await eventually { server.server.slowReadersCut == 1 })
        let final = try await watcher.finalStatus(of: 1)
        #expect(final?.status.code == StatusCode.resourceExhausted.rawValue)
        #expect(final?.status.message.contains("did not read") == true)
        try await stillServes(server)
    }
}

