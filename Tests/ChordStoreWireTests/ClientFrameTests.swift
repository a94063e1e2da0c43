import ChordStoreProto
@testable import ChordStoreWire
import Foundation
import NIOCore
import SwiftProtobuf
import Testing
import TestSupport

/// The frames a client sends, read by hand: every reading must be SwiftProtobuf's.
@Suite("Client frames read by hand")
struct ClientFrameTests {
    /// A seeded generator (SplitMix64), so a failure can be run again.
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let texts = ["", "a", "chordstore.v1.ChordStore/GetChordset", "Bearer cs1.abc.def", "Ünïcödé 🎹", "e\u{301}", String(repeating: "x", count: 300)]

    static func randomCall(_ random: inout Seeded) -> Chordstore_V1_Call {
        Chordstore_V1_Call.with {
            $0.callID = Bool.random(using: &random) ? UInt64.random(in: 0...300, using: &random) : random.next()
            $0.method = texts.randomElement(using: &random)!
            for _ in 0..<Int.random(in: 0...4, using: &random) {
                $0.metadata[texts.randomElement(using: &random)!] = texts.randomElement(using: &random)!
            }
            $0.timeoutMicros = Bool.random(using: &random) ? 0 : random.next() >> UInt64.random(in: 0...63, using: &random)
            $0.payload = Data((0..<Int.random(in: 0...200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
            $0.minSequence = Bool.random(using: &random) ? 0 : random.next()
            $0.store = texts.randomElement(using: &random)!
        }
    }

    static func bytes(_ kind: Chordstore_V1_Frame.OneOf_Kind?) -> [UInt8] {
        var frame = Chordstore_V1_Frame()
        frame.kind = kind
        return try! frame.serializedBytes()
    }

    /// SwiftProtobuf's reading of `bytes`, or nil where it throws.
    static func reference(_ bytes: [UInt8]) -> ClientFrame? {
        (try? Chordstore_V1_Frame(serializedBytes: bytes)).map(ClientFrame.init)
    }

    /// The hand reading of `bytes` (nil: it leaves them to SwiftProtobuf).
    static func byHand(_ bytes: [UInt8]) -> ClientFrame? {
        bytes.withUnsafeBytes { ClientFrame.read($0) }
    }

    // Encodings written out: a key (field << 3 | wire type), then the value.
    static func varint(_ value: UInt64) -> [UInt8] {
        var value = value
        var out: [UInt8] = []
        while value >= 0x80 {
            out.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        return out + [UInt8(value)]
    }
    static func field(_ number: UInt64, varint value: UInt64) -> [UInt8] { varint(number << 3) + varint(value) }
    static func field(_ number: UInt64, bytes value: [UInt8]) -> [UInt8] { varint(number << 3 | 2) + varint(UInt64(value.count)) + value }
    static func field(_ number: UInt64, fixed32 value: UInt32) -> [UInt8] { varint(number << 3 | 5) + withUnsafeBytes(of: value.littleEndian, Array.init) }
    static func field(_ number: UInt64, fixed64 value: UInt64) -> [UInt8] { varint(number << 3 | 1) + withUnsafeBytes(of: value.littleEndian, Array.init) }
    static func entry(_ key: String?, _ value: String?) -> [UInt8] {
        (key.map { field(1, bytes: Array($0.utf8)) } ?? []) + (value.map { field(2, bytes: Array($0.utf8)) } ?? [])
    }

    @Test("500 random calls and cancels written by SwiftProtobuf are read by hand, field for field")
    func randomFrames() throws {
        var random = Seeded(state: 36)
        for _ in 0..<500 {
            let call = Self.randomCall(&random)
            let bytes = Self.bytes(.call(call))
            let read = try #require(Self.byHand(bytes), "the hand reader gave up on a plain call: \(call)")
            #expect(read == .call(CallFrame(call)))
            #expect(try ClientFrame(ByteBuffer(bytes: bytes)) == read)
            let id = random.next()
            #expect(Self.byHand(Self.bytes(.cancel(.with { $0.callID = id }))) == .cancel(callID: id))
        }
    }

    @Test("unknown fields of every wire type, repeated fields, merged messages, oneof switches and empty map entries read as SwiftProtobuf reads them")
    func encodingsWrittenOut() throws {
        let unknowns = Self.field(99, varint: 7) + Self.field(100, bytes: [1, 2, 3]) + Self.field(101, fixed32: 9) + Self.field(102, fixed64: 10)
        let call = Self.field(1, varint: 5) + Self.field(2, bytes: Array("m".utf8)) + unknowns
            + Self.field(3, bytes: Self.entry("authorization", "Bearer x") + unknowns)
            + Self.field(3, bytes: Self.entry("session", nil)) + Self.field(3, bytes: Self.entry(nil, "v"))
            + Self.field(3, bytes: Self.entry("authorization", "Bearer y"))  // a key again: the last wins
            + Self.field(4, varint: 1_000) + Self.field(5, bytes: [0, 1]) + Self.field(6, varint: 8) + Self.field(7, bytes: Array("s".utf8))
            + Self.field(1, varint: 6) + Self.field(2, bytes: Array("n".utf8))  // scalars again: the last wins
        let second = Self.field(5, bytes: [9]) + Self.field(3, bytes: Self.entry("k", "v"))
        let cases: [(String, [UInt8])] = [
            ("a call with every field, unknowns, empty entries and repeats", Self.field(1, bytes: call)),
            ("unknown fields around the call", unknowns + Self.field(1, bytes: call) + unknowns),
            ("a call given twice merges", Self.field(1, bytes: call) + Self.field(1, bytes: second)),
            ("a cancel replaces the call before it", Self.field(1, bytes: call) + Self.field(2, bytes: Self.field(1, varint: 3))),
            ("a call replaces the cancel before it", Self.field(2, bytes: Self.field(1, varint: 3)) + Self.field(1, bytes: second)),
            ("cancels given twice merge", Self.field(2, bytes: Self.field(1, varint: 3)) + Self.field(2, bytes: unknowns)),
            ("an empty call", Self.field(1, bytes: [])),
            ("a call id of 64 bits in ten bytes", Self.field(1, bytes: Self.field(1, varint: .max))),
            ("keys padded to five bytes, the most SwiftProtobuf reads", [0x8A, 0x80, 0x80, 0x80, 0x00, 0x06, 0x88, 0x80, 0x80, 0x80, 0x00, 0x05]),
        ]
        for (name, bytes) in cases {
            let reference = try #require(Self.reference(bytes), "\(name): SwiftProtobuf refuses it")
            #expect(Self.byHand(bytes) == reference, "\(name)")
        }
        guard case .call(let merged) = Self.byHand(Self.field(1, bytes: call) + Self.field(1, bytes: second)) else {
            Issue.record("no call")
            return
        }
        #expect(merged.callID == 6 && merged.method == "n" && merged.payload == Data([9]) && merged.store == "s")
        #expect(merged.metadata == ["authorization": "Bearer y", "session": "", "": "v", "k": "v"])
    }

    @Test("what the hand reader does not read with certainty goes to SwiftProtobuf, whose answer stands")
    func leftToSwiftProtobuf() throws {
        let notUTF8 = Self.field(1, bytes: Self.field(2, bytes: [0x66, 0xFF]))
        let cases: [(String, [UInt8], ClientFrame?)] = [
            ("a method that is not UTF-8", notUTF8, nil),
            ("a metadata key that is not UTF-8", Self.field(1, bytes: Self.field(3, bytes: Self.field(1, bytes: [0xC0, 0x80]))), nil),
            ("a call id sent as bytes", Self.field(1, bytes: Self.field(1, bytes: [1])), .call(CallFrame())),
            ("a call sent as a varint", Self.field(1, varint: 1), .notFromClient),
            ("a group", Self.field(1, bytes: Self.varint(50 << 3 | 3) + Self.varint(50 << 3 | 4)), .call(CallFrame())),
            ("a varint past 64 bits (SwiftProtobuf drops the bits beyond)", Self.field(1, bytes: [0x08] + Array(repeating: 0xFF, count: 9) + [0x02]),
             .call({ var call = CallFrame(); call.callID = .max >> 1; return call }())),
            ("a length past the end", Self.field(1, bytes: [0x12, 0x05, 0x61]), nil),
            // Found by fuzz-frame in CI: a key padded to six bytes (field 1, a string) is a
            // valid varint, which SwiftProtobuf refuses as a key: the hand reader declines it.
            ("a key in six bytes", [0x8A, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00], nil),
            ("a key in six bytes inside a call", Self.field(1, bytes: [0x88, 0x80, 0x80, 0x80, 0x80, 0x00, 0x05]), nil),
            ("an unknown key in six bytes (the fuzzer's input)", [0xF0, 0xDC, 0x83, 0xBF, 0x83, 0x00, 0x00] + Self.field(1, bytes: []), nil),
            ("field number 0", [0x00, 0x00], nil),
            ("a reply", Self.bytes(.reply(.with { $0.callID = 1 })), .notFromClient),
            ("a go-away", Self.bytes(.goAway(.init())), .notFromClient),
            ("no kind", [], .notFromClient),
        ]
        for (name, bytes, expected) in cases {
            #expect(Self.byHand(bytes) == nil, "\(name): read by hand")
            #expect(Self.reference(bytes) == expected, "\(name): SwiftProtobuf's reading changed")
            #expect((try? ClientFrame(ByteBuffer(bytes: bytes))) == expected, "\(name)")
        }
    }

    @Test("20,000 damaged frames (bytes flipped, cut, inserted): wherever the hand reader answers, it answers as SwiftProtobuf")
    func damagedFrames() async throws {
        await onOwnThread {
            var random = Seeded(state: 3636)
            var readByHand = 0
            for _ in 0..<20_000 {
                var bytes = Bool.random(using: &random)
                    ? Self.bytes(.call(Self.randomCall(&random)))
                    : Self.bytes(.cancel(.with { $0.callID = random.next() }))
                for _ in 0...Int.random(in: 0...2, using: &random) where !bytes.isEmpty {
                    let at = Int.random(in: 0..<bytes.count, using: &random)
                    switch Int.random(in: 0...3, using: &random) {
                    case 0: bytes[at] ^= UInt8(1) << UInt8.random(in: 0...7, using: &random)
                    case 1: bytes[at] = UInt8.random(in: 0...255, using: &random)
                    case 2: bytes.removeSubrange(at...)
                    default: bytes.insert(UInt8.random(in: 0...255, using: &random), at: at)
                    }
                }
                let reference = Self.reference(bytes)
                if let read = Self.byHand(bytes) {
                    readByHand += 1
                    #expect(read == reference, "\(bytes)")
                }
                #expect((try? ClientFrame(ByteBuffer(bytes: bytes))) == reference, "\(bytes)")
            }
            #expect(readByHand > 2_000, "the hand reader answered for enough damaged frames to compare (2,965 with these seeds)")
        }
    }
}
