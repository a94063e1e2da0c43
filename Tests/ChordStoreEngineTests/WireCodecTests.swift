import ChordStoreRecords
import ChordStoreAPI
@testable import ChordStoreEngine
import ChordStoreDomain
import ChordStoreProto
import Foundation
import SwiftProtobuf
import Testing

/// The hand-written codec must agree byte-for-meaning with the generated SwiftProtobuf
/// code in both directions, and must never crash on damaged input.
@Suite("Wire codec")
struct WireCodecTests {
    static func randomChord(_ g: inout SplitMix64, position: Int) -> Chord {
        Chord(id: UUID.random(using: &g), position: position, bpm: Double(g.next() % 100_000) / 100, color: .random(using: &g))
    }

    static func randomChordset(_ g: inout SplitMix64) -> Chordset {
        let titles = ["", "Verse", "Ünïcödé ✓ 👨‍👩‍👧‍👦", String(repeating: "long ", count: 40)]
        return Chordset(
            id: UUID.random(using: &g), title: titles[Int(g.next() % 4)],
            creationDate: Instant(microsecondsSince1970: Int64(bitPattern: g.next()) % 60_000_000_000_000_000),
            index: Int(g.next() % 3 == 0 ? 0 : g.next() % 10_000_000),
            chords: (0..<8).map { randomChord(&g, position: $0) })
    }

    static func randomEvent(_ g: inout SplitMix64) -> RecordedEvent {
        let chordset = randomChordset(&g)
        let maybeID: UUID? = g.next() % 2 == 0 ? nil : UUID.random(using: &g)
        let events: [Event] = [
            .chordsetAdded(chordset),
            .chordsetRenamed(id: chordset.id, title: chordset.title, previousTitle: g.next() % 2 == 0 ? "" : "old"),
            .chordsetDeleted(chordset),
            .chordColorSet(chordID: UUID.random(using: &g), chordsetID: maybeID, color: .random(using: &g), previous: .random(using: &g)),
            .chordBPMSet(chordID: UUID.random(using: &g), chordsetID: maybeID, bpm: 1, previous: 999),
            .controlsChordSet(randomChord(&g, position: 0), previous: g.next() % 2 == 0 ? nil : randomChord(&g, position: 0)),
            .chordsetMoved(id: chordset.id, from: Int(g.next() % 1_000), to: Int(g.next() % 1_000)),
            .allDeleted(count: Int(g.next() % 1_000_000)),
        ]
        return RecordedEvent(
            sequence: g.next() % 3 == 0 ? 1 : g.next() >> 1, epoch: g.next() % 4, timestamp: chordset.creationDate,
            session: g.next() % 2 == 0 ? "" : "ipad-\(g.next() % 100)", commandID: UUID.random(using: &g).uuidString,
            event: events[Int(g.next() % UInt64(events.count))], checksum: 0)
    }

    @Test("records written by hand decode identically with SwiftProtobuf, and the reverse")
    func agreesWithSwiftProtobuf() throws {
        var g = SplitMix64(seed: 99)
        for _ in 0..<2_000 {
            var recorded = Self.randomEvent(&g)
            let (bytes, checksum) = RecordCodec.encode(recorded, previousChecksum: 7)
            recorded.checksum = checksum

            let generated = try Chordstore_V1_EventEnvelope(serializedBytes: bytes)
            #expect(generated.checksum == checksum)
            let viaGenerated = RecordedEvent(
                sequence: generated.sequence, epoch: generated.epoch, timestamp: Instant(proto: generated.timestamp),
                session: generated.session, commandID: generated.commandID, event: try Event(envelope: generated),
                checksum: generated.checksum)
            #expect(viaGenerated == recorded)

            let reencoded: [UInt8] = try RecordCodec.envelope(for: recorded).serializedBytes()
            let viaHand = try reencoded.withUnsafeBytes { try WireCodec.readEnvelope($0) }
            #expect(viaHand == recorded)
        }
    }

    @Test("view records round-trip a chordset without its index")
    func chordsetRecord() throws {
        var g = SplitMix64(seed: 5)
        for _ in 0..<200 {
            var chordset = Self.randomChordset(&g)
            let decoded = try WireCodec.chordsetRecord(chordset).withUnsafeBytes { try WireCodec.readChordset($0) }
            chordset.index = 0
            #expect(decoded == chordset)
        }
    }

    @Test("a chordset message built from a view record and an index is the generated code's Chordset")
    func chordsetMessageFromRecord() throws {
        var g = SplitMix64(seed: 6)
        for round in 0..<200 {
            var chordset = Self.randomChordset(&g)
            chordset.index = round % 3 == 0 ? 0 : Int(g.next() % 100_000)
            let message = WireCodec.chordsetRecord(chordset).withUnsafeBytes {
                WireCodec.chordsetMessage(record: $0, index: chordset.index)
            }
            #expect(try Chordstore_V1_Chordset(serializedBytes: message) == chordset.proto)
            #expect(try Chordstore_V1_Chordset(serializedBytes: WireCodec.chordsetMessage(chordset)) == chordset.proto)
        }
    }

    @Test("every truncation and single-byte change of a record is rejected or decoded, never a crash")
    func damagedInputNeverCrashes() throws {
        var g = SplitMix64(seed: 3)
        var rejected = 0
        for _ in 0..<40 {
            let (bytes, _) = RecordCodec.encode(Self.randomEvent(&g), previousChecksum: 0)
            for length in 0..<bytes.count {
                let prefix = Array(bytes[..<length])
                if (try? prefix.withUnsafeBytes({ try WireCodec.readEnvelope($0) })) == nil { rejected += 1 }
            }
            for _ in 0..<50 {
                var damaged = bytes
                damaged[Int(g.next() % UInt64(damaged.count))] ^= UInt8(truncatingIfNeeded: g.next() | 1)
                _ = try? damaged.withUnsafeBytes { try WireCodec.readEnvelope($0) }
            }
        }
        #expect(rejected > 1_000)
    }

    @Test("XXH64 matches the reference test vectors")
    func xxhashVectors() {
        #expect(XXHash64.hash(Array("".utf8)) == 0xEF46_DB37_51D8_E999)
        #expect(XXHash64.hash(Array("a".utf8)) == 0xD24E_C4F1_A98C_6E5B)
        #expect(XXHash64.hash(Array("abc".utf8)) == 0x44BC_2CF5_AD77_0999)
        let long = Array("Nobody inspects the spammish repetition".utf8)
        #expect(XXHash64.hash(long) == 0xFBCE_A83C_8A37_8BF1)
    }
}
