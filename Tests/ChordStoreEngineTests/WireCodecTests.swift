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

    @Test("a replay's fields read into an element in place are the record's: nothing of the element's last record stays")
    func replayFieldsReadInPlace() throws {
        var g = SplitMix64(seed: 17)
        var fields = ReplayFields.empty
        for round in 0..<2_000 {
            var recorded = Self.randomEvent(&g)
            // Every other record has every optional field set, the next none of them: a field
            // the in-place read forgot would keep the last record's value.
            if round % 2 == 0 {
                recorded.mark = g.next() % 2 == 0 ? .undoes(g.next() >> 1) : .redoes(g.next() >> 1)
                recorded.store = UInt32(g.next() % 1_000 + 1)
                recorded.logSequence = recorded.sequence + g.next() % 1_000 + 1
                recorded.tokenID = "token-\(g.next() % 1_000)"
                recorded.session = "ipad-\(g.next() % 100)"
            } else {
                recorded.mark = nil
                recorded.store = 0
                recorded.logSequence = recorded.sequence
                recorded.tokenID = ""
                recorded.session = ""
            }
            let (bytes, _) = RecordCodec.encode(recorded, previousChecksum: 7)
            try bytes.withUnsafeBytes { raw in
                try RecordCodec.decodeReplayFields(raw, sequence: recorded.logSequence, into: &fields)
            }
            // As a recorded event, with what the replay does not read (epoch, checksum) taken over.
            let read = RecordedEvent(
                sequence: fields.sequence, epoch: recorded.epoch, timestamp: fields.timestamp, session: fields.session,
                commandID: fields.commandID, event: fields.event, checksum: recorded.checksum, mark: fields.mark, store: fields.store,
                logSequence: fields.logSequence, tokenID: fields.tokenID)
            #expect(read == recorded, "round \(round)")
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

    @Test("a chord written on the stack is the generated code's bytes, zero fields left out, -0.0 kept")
    func inlineChord() throws {
        var g = SplitMix64(seed: 8)
        let edges: [Double] = [0, -0.0, 1, 999, 0.5, .leastNonzeroMagnitude, .greatestFiniteMagnitude]
        for round in 0..<500 {
            var chord = Self.randomChord(&g, position: Int(g.next() % 8))
            if round % 5 == 0 {
                chord.bpm = edges[Int(g.next() % UInt64(edges.count))]
                chord.color = ChordColor(
                    hue: edges[Int(g.next() % 7)], purity: edges[Int(g.next() % 7)], brightness: edges[Int(g.next() % 7)],
                    alpha: edges[Int(g.next() % 7)])
            }
            if round == 1 { chord.position = Int(UInt32.max) }  // a varint of five bytes
            let bytes = WireCodec.chordRecord(chord)
            #expect(bytes == (try chord.proto.serializedBytes() as [UInt8]))
            if round != 1 { #expect(try bytes.withUnsafeBytes { try WireCodec.readChord($0) } == chord) }  // (a reader refuses that position)
            var w = ProtoWriter()
            WireCodec.write(&w, field: 5, chord)
            #expect(w.bytes == [0x2A, UInt8(bytes.count)] + bytes)
        }
        // -0.0 is written, as SwiftProtobuf writes it (only +0.0 is left out), and read back
        // with its sign.
        var negative = Self.randomChord(&g, position: 0)
        negative.bpm = -0.0
        negative.color.alpha = -0.0
        let negativeBytes = WireCodec.chordRecord(negative)
        #expect(negativeBytes == (try negative.proto.serializedBytes() as [UInt8]))
        let decoded = try negativeBytes.withUnsafeBytes { try WireCodec.readChord($0) }
        #expect(decoded.bpm.sign == .minus && decoded.color.alpha.sign == .minus)
    }

    @Test("inline keys have the layouts of the views (big-endian numbers, the creation time's sign bit flipped)")
    func keyLayouts() throws {
        let id = UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!
        let idBytes: [UInt8] = [0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF]
        #expect(KeyBytes.id(id).array == idBytes)
        #expect(KeyBytes.sequence(0x0102_0304_0506_0708).array == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(KeyBytes.index(0x0A0B_0C0D).array == [0x0A, 0x0B, 0x0C, 0x0D])
        #expect(KeyBytes.creation(Instant(microsecondsSince1970: 1), id).array == [0x80, 0, 0, 0, 0, 0, 0, 1] + idBytes)
        #expect(KeyBytes.creation(Instant(microsecondsSince1970: -1), id).array == [0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF] + idBytes)
        #expect(KeyBytes.history(id, 258).array == idBytes + [0, 0, 0, 0, 0, 0, 1, 2])
        #expect(KeyBytes.revision(.chordset(id)).array == [0] + idBytes)
        #expect(KeyBytes.revision(.controls).array == [1])
        #expect(KeyBytes.revision(.collection).array == [2])
        #expect(KeyBytes.revision(.bulk).array == [3])
        #expect(StoreKeys.title("a", Instant(microsecondsSince1970: 1), id) == Array("a".utf8) + [0, 0x80, 0, 0, 0, 0, 0, 0, 1] + idBytes)
        // What the views hand LMDB is the same bytes.
        #expect(KeyBytes.history(id, 7).withViewBytes { Array($0) } == idBytes + [0, 0, 0, 0, 0, 0, 0, 7])

        // Session keys: the name's length, then its bytes (at most 255).
        #expect(StoreKeys.session("ab") == [2, 0x61, 0x62])
        #expect(StoreKeys.session("") == [0])
        let long = StoreKeys.session(String(repeating: "x", count: 300))
        #expect(long.count == 256 && long[0] == 255 && long.dropFirst().allSatisfy { $0 == 0x78 })
        // Revision values: the last change, the last by another session, the session.
        let revision = Revision(last: 0x0102, lastSession: "s", lastByOther: 3)
        #expect(StoreKeys.revision(revision) == [0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0x73])
        let encodedRevision: [UInt8] = StoreKeys.revision(revision)
        let readBack = try encodedRevision.withUnsafeBytes { raw throws -> Revision in try StoreKeys.revision(raw) }
        #expect(readBack == revision)
        // A session's record and an event's link: their numbers big-endian, read back.
        var record = SessionRecord()
        (record.undoTop, record.redoTop, record.redoDepth, record.first, record.last) = (1, 2, 3, 0x0405, UInt64.max)
        let recordBytes = record.bytes.array
        #expect(recordBytes == [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 4, 5]
            + [UInt8](repeating: 0xFF, count: 8))
        #expect(recordBytes.withUnsafeBytes { SessionRecord($0) } == record)
        #expect(recordBytes.dropLast().withUnsafeBytes { SessionRecord($0) } == nil)
        let link = SessionLink(below: 7, previous: 8, next: 0x0900)
        #expect(link.bytes.array == [0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 9, 0])
        #expect(link.bytes.array.withUnsafeBytes { SessionLink($0) } == link)
        #expect(recordBytes.withUnsafeBytes { SessionLink($0) } == nil)
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
