import ChordStoreAPI
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
@testable import ChordStoreServer
import ChordStoreWire
import Logging
import NIOCore
import NIOEmbedded
import SwiftProtobuf
import Testing

/// The framed connection's handler on a test channel (no socket): the frames it is fed,
/// the frames it writes, its timers run by advancing the loop's clock.
@Suite("Connection handler")
struct ConnectionHandlerTests {
    /// A handler over an in-memory store on a connected test channel.
    struct Rig {
        let channel: NIOAsyncTestingChannel
        let store: ChordStore

        init(adminToken: String? = nil) async throws {
            store = ChordStore.inMemory()
            let logger = Logger(label: "test")
            let limits = WireLimits()
            let authenticator = Authenticator(
                store: store, mode: adminToken.map { .tokens(localAdmin: $0, clusterSecret: nil) } ?? .none, logger: logger)
            let dispatcher = ServiceDispatcher(store: store, limits: limits, node: "test", authenticator: authenticator.isEnabled ? authenticator : nil)
            let executor = CallExecutor(
                dispatcher: dispatcher, authenticator: authenticator, activity: ServerActivity(limits: limits), metrics: nil, logger: logger, limits: limits)
            let channel = NIOAsyncTestingChannel()
            try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 5_000))
            try await channel.testingEventLoop.executeInContext {
                let handler = ConnectionHandler(executor: executor, limits: limits, logger: logger, connection: 1, inbox: LoopInbox(loop: channel.eventLoop))
                try channel.pipeline.syncOperations.addHandler(handler)
            }
            self.channel = channel
        }

        func send(_ id: UInt64, _ method: Method, _ request: some SwiftProtobuf.Message, metadata: [String: String] = [:], timeoutMicros: UInt64 = 0, minSequence: UInt64 = 0) async throws {
            let frame = Chordstore_V1_Frame.with {
                $0.call = Chordstore_V1_Call.with {
                    $0.callID = id
                    $0.method = method.rawValue
                    $0.payload = try! request.serializedData()
                    $0.metadata = metadata
                    $0.timeoutMicros = timeoutMicros
                    $0.minSequence = minSequence
                }
            }
            try await channel.writeInbound(ByteBuffer(bytes: try frame.serializedBytes() as [UInt8]))
        }

        /// The frames written so far.
        func written() async throws -> [Chordstore_V1_Frame] {
            var frames: [Chordstore_V1_Frame] = []
            while var buffer = try await channel.readOutbound(as: ByteBuffer.self) {
                while let length = buffer.readInteger(endianness: .big, as: UInt32.self), let bytes = buffer.readBytes(length: Int(length)) {
                    frames.append(try Chordstore_V1_Frame(serializedBytes: bytes))
                }
            }
            return frames
        }

        /// The next frame written, waiting for it.
        func next() async throws -> Chordstore_V1_Frame {
            var buffer = try await channel.waitForOutboundWrite(as: ByteBuffer.self)
            let length = buffer.readInteger(endianness: .big, as: UInt32.self) ?? 0
            return try Chordstore_V1_Frame(serializedBytes: buffer.readBytes(length: Int(length)) ?? [])
        }

        func close() async throws {
            _ = try? await channel.finish()
            store.close()
        }
    }

    @Test("a point read is answered on the loop; a command through the writer, under the connection's default session; garbage gets GoAway and closes")
    func callsAndGarbage() async throws {
        let rig = try await Rig()
        try await rig.send(1, .health, Chordstore_V1_HealthRequest())
        let health = try await rig.written()
        #expect(health.count == 1 && health[0].reply.callID == 1 && health[0].reply.status.code == 0)
        #expect(try Chordstore_V1_HealthReply(serializedBytes: health[0].reply.payload).node == "test")
        try await rig.send(2, .addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "x" })
        let added = try await rig.next()
        #expect(added.reply.callID == 2 && added.reply.hasStatus && added.reply.status.code == 0)
        let event = try Chordstore_V1_CommandReply(serializedBytes: added.reply.payload).event
        #expect(event.session == "connection-127.0.0.1:5000-1", "the default session is the peer's and the connection's number")
        try await rig.send(3, .addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "y" }, metadata: ["session": "mine"])
        #expect(try Chordstore_V1_CommandReply(serializedBytes: try await rig.next().reply.payload).event.session == "mine")
        try await rig.channel.writeInbound(ByteBuffer(bytes: [0xFF, 0x01]))
        let goAway = try await rig.written()
        #expect(goAway.last?.goAway.status.code == StatusCode.invalidArgument.rawValue)
        #expect(!rig.channel.isActive)
        try await rig.close()
    }

    @Test("a stream's page from a task that was cancelled (every end of a call cancels its task) fails with CANCELLED: that is how its producer stops")
    func cancelledStreamSendFails() async throws {
        let rig = try await Rig()
        let channel = rig.channel
        let bound = try await channel.testingEventLoop.executeInContext {
            NIOLoopBound(try channel.pipeline.syncOperations.handler(type: ConnectionHandler.self), eventLoop: channel.eventLoop)
        }
        let stream = StreamWriter(channel: rig.channel, callID: 9, token: 9, limits: WireLimits(), handler: bound)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await stream.send([.bytes([1, 2, 3])])
        }
        let error = await #expect(throws: WireError.self) { try await task.value }
        #expect(error?.code == .cancelled)
        // Not cancelled: sent without waiting (the channel has room); the call is not one of
        // the connection's, so the loop drops the page.
        try await stream.send([.bytes([1, 2, 3])])
        #expect(try await rig.written().isEmpty)
        try await rig.close()
    }

    @Test("past the free failed authentications, the refusal comes after its delay, and the frames read meanwhile wait for it, in order")
    func penaltyHoldsFrames() async throws {
        let rig = try await Rig(adminToken: "cs1.admin.0123456789abcdef0123456789abcdef")
        let wrong = ["authorization": "Bearer cs1.nope.00000000000000000000000000000000"]
        for id in 1...3 { try await rig.send(UInt64(id), .health, Chordstore_V1_HealthRequest(), metadata: wrong) }
        #expect(try await rig.written().map(\.reply.status.code) == Array(repeating: StatusCode.unauthenticated.rawValue, count: 3))
        try await rig.send(4, .health, Chordstore_V1_HealthRequest(), metadata: wrong)
        try await rig.send(5, .health, Chordstore_V1_HealthRequest())  // no credential: Health needs none
        #expect(try await rig.written().isEmpty, "the fourth failure waits, and the call behind it too")
        await rig.channel.testingEventLoop.advanceTime(by: .milliseconds(99))
        #expect(try await rig.written().isEmpty)
        await rig.channel.testingEventLoop.advanceTime(by: .milliseconds(1))
        let replies = try await rig.written().map(\.reply)
        #expect(replies.map(\.callID) == [4, 5])
        #expect(replies.map(\.status.code) == [StatusCode.unauthenticated.rawValue, 0])
        try await rig.close()
    }

    @Test("a valid credential refused by a method's permission still makes the connection no stranger's: no NO_CREDENTIAL_IN_TIME")
    func deniedCredentialIsProof() async throws {
        let token = "cs1.\(TokenGrant.localAdminID).0123456789abcdef0123456789abcdef"
        let rig = try await Rig(adminToken: token)
        let admin = ["authorization": "Bearer \(token)"]
        try await rig.send(1, .ackReplication, Chordstore_V1_ReplicationAck(), metadata: admin)  // members only
        let denied = try await rig.written()
        #expect(denied.first?.reply.status.reason == ErrorReason.membersOnly.rawValue)
        await rig.channel.testingEventLoop.advanceTime(by: .seconds(11))
        let later = try await rig.written()
        #expect(!later.contains { $0.goAway.status.reason == ErrorReason.noCredentialInTime.rawValue }, "\(later)")
        try await rig.close()
    }

    @Test("a connection that shows no credential in time gets NO_CREDENTIAL_IN_TIME")
    func strangerTimesOut() async throws {
        let rig = try await Rig(adminToken: "cs1.admin.0123456789abcdef0123456789abcdef")
        try await rig.send(1, .health, Chordstore_V1_HealthRequest())
        _ = try await rig.written()
        await rig.channel.testingEventLoop.advanceTime(by: .seconds(11))
        #expect(try await rig.written().contains { $0.goAway.status.reason == ErrorReason.noCredentialInTime.rawValue })
        try await rig.close()
    }

    @Test("a call waiting for a min_sequence ends with DEADLINE_EXCEEDED at its deadline; the connection goes on")
    func deadline() async throws {
        let rig = try await Rig()
        try await rig.send(1, .getProfile, Chordstore_V1_GetProfileRequest(), timeoutMicros: 50_000, minSequence: 99)
        #expect(try await rig.written().isEmpty)
        await rig.channel.testingEventLoop.advanceTime(by: .milliseconds(50))
        let ended = try await rig.written()
        #expect(ended.map(\.reply.callID) == [1] && ended.first?.reply.status.code == StatusCode.deadlineExceeded.rawValue)
        try await rig.send(1, .health, Chordstore_V1_HealthRequest())
        #expect(try await rig.written().first?.reply.status.code == 0, "the id is free again")
        try await rig.close()
    }
}
