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

/// Every method of the service over loopback, and the status codes a client can cause.
@Suite("Server methods")
struct ServerMethodTests {
    @Test("every method answers over the wire")
    func everyMethod() async throws {
        let server = try await TestServer.start()
        let client = try await server.connect()
        defer { Task { await client.close(); await server.stop() } }

        let health: Chordstore_V1_HealthReply = try await client.call(.health, Chordstore_V1_HealthRequest())
        #expect(health.protocolVersion == 1)
        #expect(health.node == "test-node")

        let added: Chordstore_V1_CommandReply = try await client.call(.addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "Verse" })
        let chordset = added.event.chordsetAdded.chordset
        #expect(added.event.sequence == 1)
        #expect(chordset.chords.count == 8)
        _ = try await client.call(.addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "Chorus" }, as: Chordstore_V1_CommandReply.self)

        let renamed: Chordstore_V1_CommandReply = try await client.call(.renameChordset, Chordstore_V1_RenameChordsetRequest.with {
            $0.chordsetID = chordset.id
            $0.title = "Bridge"
        })
        #expect(renamed.event.chordsetRenamed.previousTitle == "Verse")
        let chordID = chordset.chords[2].id
        _ = try await client.call(.setChordColor, Chordstore_V1_SetChordColorRequest.with {
            $0.chordID = chordID
            $0.color = .with { $0.hue = 0.5; $0.purity = 0.5; $0.brightness = 0.5; $0.alpha = 1 }
        }, as: Chordstore_V1_CommandReply.self)
        _ = try await client.call(.setChordBPM, Chordstore_V1_SetChordBpmRequest.with { $0.chordID = chordID; $0.bpm = 90 },
                                  as: Chordstore_V1_CommandReply.self)
        _ = try await client.call(.setControlsChord, Chordstore_V1_SetControlsChordRequest.with {
            $0.bpm = 100
            $0.color = .with { $0.alpha = 1 }
        }, as: Chordstore_V1_CommandReply.self)
        _ = try await client.call(.moveChordset, Chordstore_V1_MoveChordsetRequest.with { $0.chordsetID = chordset.id; $0.toIndex = 1 },
                                  as: Chordstore_V1_CommandReply.self)

        let list: Chordstore_V1_ChordsetList = try await client.call(.listChordsets, Chordstore_V1_ListChordsetsRequest.with { $0.order = .index })
        #expect(list.chordsets.map(\.title) == ["Chorus", "Bridge"])
        let got: Chordstore_V1_Chordset = try await client.call(.getChordset, Chordstore_V1_GetChordsetRequest.with { $0.chordsetID = chordset.id })
        #expect(got.chords[2].bpm == 90)
        let chord: Chordstore_V1_ChordView = try await client.call(.getChord, Chordstore_V1_GetChordRequest.with { $0.chordID = chordID })
        #expect(chord.chordsetID == chordset.id)
        let controls: Chordstore_V1_Chord = try await client.call(.getControlsChord, Chordstore_V1_GetControlsChordRequest())
        #expect(controls.bpm == 100)
        let profile: Chordstore_V1_Profile = try await client.call(.getProfile, Chordstore_V1_GetProfileRequest())
        #expect(profile.chordsets == 2 && profile.chords == 17 && profile.lastSequence == 7)

        var sequences: [UInt64] = []
        for try await event in try await client.stream(.readLog, Chordstore_V1_ReadLogRequest.with { $0.fromSequence = 3 }, as: Chordstore_V1_EventEnvelope.self) {
            sequences.append(event.sequence)
        }
        #expect(sequences == Array(3...7))

        _ = try await client.call(.deleteChordset, Chordstore_V1_DeleteChordsetRequest.with { $0.chordsetID = chordset.id },
                                  as: Chordstore_V1_CommandReply.self)
        let all: Chordstore_V1_CommandReply = try await client.call(.deleteAll, Chordstore_V1_DeleteAllRequest())
        #expect(all.event.allDeleted.chordsetCount == 1)
        #expect(try server.store.verify().isSound)
    }

    @Test("refusals arrive with the engine's status codes and messages")
    func statusCodes() async throws {
        let server = try await TestServer.start()
        let client = try await server.connect()
        defer { Task { await client.close(); await server.stop() } }
        func code(_ body: () async throws -> Void) async -> StatusCode? {
            do { try await body(); return .ok } catch let error as ClientError { return error.code } catch { return nil }
        }
        #expect(await code {
            _ = try await client.call(.getChordset, Chordstore_V1_GetChordsetRequest.with { $0.chordsetID = Data(repeating: 1, count: 16) },
                                      as: Chordstore_V1_Chordset.self)
        } == .notFound)
        #expect(await code {
            _ = try await client.call(.getChordset, Chordstore_V1_GetChordsetRequest.with { $0.chordsetID = Data([1, 2, 3]) },
                                      as: Chordstore_V1_Chordset.self)
        } == .invalidArgument)
        #expect(await code {
            _ = try await client.call(.addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "bad\ntitle" },
                                      as: Chordstore_V1_CommandReply.self)
        } == .invalidArgument)
        let id = Data(repeating: 7, count: 16)
        _ = try await client.call(.addChordset, Chordstore_V1_AddChordsetRequest.with { $0.id = id }, as: Chordstore_V1_CommandReply.self)
        #expect(await code {
            _ = try await client.call(.addChordset, Chordstore_V1_AddChordsetRequest.with { $0.id = id }, as: Chordstore_V1_CommandReply.self)
        } == .alreadyExists)
        #expect(await code {
            _ = try await client.call(.getControlsChord, Chordstore_V1_GetControlsChordRequest(), as: Chordstore_V1_Chord.self)
        } == .notFound)
        _ = try await client.call(.renameChordset, Chordstore_V1_RenameChordsetRequest.with { $0.chordsetID = id; $0.context.commandID = "k" },
                                  as: Chordstore_V1_CommandReply.self)
        #expect(await code {
            _ = try await client.call(.deleteAll, Chordstore_V1_DeleteAllRequest.with { $0.context.commandID = "k" },
                                      as: Chordstore_V1_CommandReply.self)
        } == .failedPrecondition)

        let raw = try RawClient(port: server.port)
        try raw.call(1, "chordstore.v1.ChordStore/NoSuchMethod", Chordstore_V1_GetProfileRequest())
        #expect(try await raw.finalStatus(of: 1)?.status.code == StatusCode.unimplemented.rawValue)
        var notARequest = Chordstore_V1_Frame()
        notARequest.call = .with { $0.callID = 2; $0.method = Method.getChordset.rawValue; $0.payload = Data([0xFF, 0xFF, 0xFF]) }
        try raw.send(notARequest)
        let status = try await raw.finalStatus(of: 2)?.status
        #expect(status?.code == StatusCode.invalidArgument.rawValue)
        #expect(status?.message.contains("is not a chordstore.v1.GetChordsetRequest") == true)
    }

    @Test("100 calls in flight on one connection and 50 connections at once all get their own replies")
    func concurrency() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = try await server.connect()
        let titles = try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<100 {
                group.addTask {
                    let reply: Chordstore_V1_CommandReply = try await client.call(
                        .addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "t\(i)" })
                    return reply.event.chordsetAdded.chordset.title
                }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(titles.count == 100)
        await client.close()

        let counts = try await withThrowingTaskGroup(of: UInt64.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    let connection = try await server.connect()
                    let profile: Chordstore_V1_Profile = try await connection.call(.getProfile, Chordstore_V1_GetProfileRequest())
                    await connection.close()
                    return profile.chordsets
                }
            }
            return try await group.reduce(into: [UInt64]()) { $0.append($1) }
        }
        #expect(counts == Array(repeating: 100, count: 50))
    }

    @Test("a retried command with the same id over a new connection is applied once")
    func retryAfterDroppedConnection() async throws {
        let server = try await TestServer.start(durable: true)
        defer { Task { await server.stop() } }
        let request = Chordstore_V1_AddChordsetRequest.with { $0.title = "once"; $0.context.commandID = "retry-1" }
        do {
            let raw = try RawClient(port: server.port)
            try raw.call(1, Method.addChordset.rawValue, request)
        }
        let client = try await server.connect()
        let reply: Chordstore_V1_CommandReply = try await client.call(.addChordset, request)
        let again: Chordstore_V1_CommandReply = try await client.call(.addChordset, request)
        #expect(reply.event.sequence == again.event.sequence)
        #expect(try server.store.profile().chordsets == 1)
        await client.close()
    }

    @Test("a call past its deadline ends with DEADLINE_EXCEEDED; a cancelled stream ends with CANCELLED")
    func deadlineAndCancel() async throws {
        let server = try await TestServer.start(durable: true)
        defer { Task { await server.stop() } }
        let raw = try RawClient(port: server.port)
        try raw.call(1, Method.addChordset.rawValue, Chordstore_V1_AddChordsetRequest(), timeoutMicros: 1)
        #expect(try await raw.finalStatus(of: 1)?.status.code == StatusCode.deadlineExceeded.rawValue)

        for i in 0..<2_000 { _ = try await server.store.execute(.addChordset(AddChordset(title: "c\(i)"))) }
        // The Call and its Cancel in one write: the server handles the Cancel before the
        // stream's first page can reach the event loop, however fast the stream is.
        var readLog = Chordstore_V1_Frame()
        readLog.call = .with {
            $0.callID = 2
            $0.method = Method.readLog.rawValue
        }
        var cancel = Chordstore_V1_Frame()
        cancel.cancel = .with { $0.callID = 2 }
        try raw.send([readLog, cancel])
        let ended = try await raw.finalStatus(of: 2)
        #expect(ended?.status.code == StatusCode.cancelled.rawValue)
        #expect((ended?.messages ?? .max) < 2_001)
        try raw.call(3, Method.getProfile.rawValue, Chordstore_V1_GetProfileRequest())
        #expect(try await raw.finalStatus(of: 3)?.status.code == 0)
    }

    @Test("a call id reused after its call ended is answered by the new call, not the old task")
    func reusedCallID() async throws {
        let server = try await TestServer.start(durable: true)
        defer { Task { await server.stop() } }
        let raw = try RawClient(port: server.port)
        try raw.call(1, Method.addChordset.rawValue, Chordstore_V1_AddChordsetRequest(), timeoutMicros: 1)
        #expect(try await raw.finalStatus(of: 1)?.status.code == StatusCode.deadlineExceeded.rawValue)
        try raw.call(1, Method.health.rawValue, Chordstore_V1_HealthRequest())
        let frame = try await offPool { try raw.readFrame() }
        guard case .reply(let reply)? = frame?.kind else {
            Issue.record("no reply")
            return
        }
        #expect(reply.callID == 1)
        #expect(reply.status.code == 0)
        #expect(try Chordstore_V1_HealthReply(serializedBytes: reply.payload).protocolVersion == 1)
    }

    @Test("ReadLog and Subscribe send the events before a damaged record, then end with DATA_LOSS naming it, never its bytes")
    func damagedRecordOverTheWire() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("damaged-wire-\(UUID().uuidString)")
        do {
            let store = try ChordStore.open(at: directory)
            for i in 1...40 { _ = try await store.add("chordset marker-\(i)-end") }
            store.close()
        }
        #expect(try damage("marker-17-end", in: directory.appendingPathComponent("data.mdb")) > 0)
        let server = try await TestServer.start(store: try ChordStore.open(at: directory))
        defer { Task { await server.stop() } }
        let raw = try RawClient(port: server.port)
        try raw.call(1, Method.readLog.rawValue, Chordstore_V1_ReadLogRequest())
        let read = try await raw.finalStatus(of: 1)
        #expect(read?.messages == 16)
        #expect(read?.status.code == StatusCode.dataLoss.rawValue)
        #expect(read?.status.message.contains("event 17") == true)
        #expect(read?.status.message.contains("marker") == false)
        try raw.call(2, Method.subscribe.rawValue, Chordstore_V1_SubscribeRequest.with { $0.fromSequence = 10 })
        let fed = try await raw.finalStatus(of: 2)
        #expect(fed?.messages == 7)
        #expect(fed?.status.code == StatusCode.dataLoss.rawValue)
        try raw.call(3, Method.readLog.rawValue, Chordstore_V1_ReadLogRequest.with { $0.fromSequence = 18 })
        #expect(try await raw.finalStatus(of: 3)?.messages == 23)
    }
}

