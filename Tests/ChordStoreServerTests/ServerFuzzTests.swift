import ChordStoreAPI
@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf
import TestSupport
import Testing

/// Random and mutated frames against a live server: each is answered, or its connection
/// is closed; the server keeps serving a well-behaved client and the store stays sound.
@Suite("Server fuzz")
struct ServerFuzzTests {
    static func validFrames() throws -> [[UInt8]] {
        func call(_ method: Method, _ payload: some SwiftProtobuf.Message) throws -> [UInt8] {
            var frame = Chordstore_V1_Frame()
            frame.call = .with {
                $0.callID = 1
                $0.method = method.rawValue
                $0.payload = try! payload.serializedData()
            }
            return try frame.serializedBytes()
        }
        return [
            try call(.addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "fuzz" }),
            try call(.getProfile, Chordstore_V1_GetProfileRequest()),
            try call(.listChordsets, Chordstore_V1_ListChordsetsRequest.with { $0.limit = 3 }),
            try call(.readLog, Chordstore_V1_ReadLogRequest.with { $0.limit = 2 }),
            try call(.setChordBPM, Chordstore_V1_SetChordBpmRequest.with { $0.chordID = Data(repeating: 1, count: 16); $0.bpm = 90 }),
            try call(.health, Chordstore_V1_HealthRequest()),
        ]
    }

    @Test("10,000 random and mutated frames leave the server up and the store sound")
    func randomFrames() async throws {
        let server = try await TestServer.start(durable: true)
        defer { Task { await server.stop() } }
        let valid = try Self.validFrames()
        var g = SplitMix64(seed: 2026)
        var sent = 0
        while sent < 10_000 {
            let raw = try RawClient(port: server.port)
            var bytes: [UInt8] = []
            for _ in 0..<200 {
                var body = valid[Int(g.next() % UInt64(valid.count))]
                switch g.next() % 4 {
                case 0: body = (0..<Int(g.next() % 64)).map { _ in UInt8(truncatingIfNeeded: g.next()) }
                case 1: body[Int(g.next() % UInt64(body.count))] ^= UInt8(truncatingIfNeeded: g.next() | 1)
                case 2: body = Array(body.prefix(Int(g.next() % UInt64(body.count + 1))))
                default: break
                }
                bytes += withUnsafeBytes(of: UInt32(body.count).bigEndian) { Array($0) } + body
                sent += 1
            }
            if g.next() % 10 == 0 {
                bytes += withUnsafeBytes(of: UInt32.random(in: 0...UInt32.max, using: &g).bigEndian) { Array($0) }
            }
            raw.send(bytes)
            raw.finishSending()
            _ = try await raw.readUntilClosed()
        }
        let client = try await server.connect()
        let health: Chordstore_V1_HealthReply = try await client.call(.health, Chordstore_V1_HealthRequest())
        #expect(health.protocolVersion == 1)
        await client.close()
        #expect(try server.store.verify().isSound)
    }
}
