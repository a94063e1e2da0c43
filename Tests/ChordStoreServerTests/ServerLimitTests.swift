import ChordStoreClient
import ChordStoreDomain
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf
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
        let server = try await TestServer.start(limits: limits)
        defer { Task { await server.stop() } }
        let bystander = try await server.connect()

        let huge = try RawClient(port: server.port)
        huge.send([0x7F, 0xFF, 0xFF, 0xFF])
        let hugeGoAway = try await huge.readUntilClosed()
        #expect(hugeGoAway?.status.code == StatusCode.resourceExhausted.rawValue)
        #expect(hugeGoAway?.status.message.contains("exceeds the limit of 1000 bytes") == true)

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
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<20_000 { group.addTask { _ = try await server.store.execute(.addChordset(AddChordset(title: "c\(i)"))) } }
            try await group.waitForAll()
        }
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
}
