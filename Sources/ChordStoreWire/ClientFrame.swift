package import ChordStoreProto
package import Foundation
package import NIOCore
import ChordStoreDomain
import SwiftProtobuf

/// A frame as a client sends it: a call, a cancel, or something a client does not send.
///
/// ``init(_:)`` reads the common frames, a `Call` or a `Cancel`, by hand, straight from
/// the frame's bytes (no `Frame` and `Call` messages built and copied on the way; about a
/// tenth of the framed port's CPU per point read went there). Anything it does not read
/// with certainty (another kind, a known field with an unexpected wire type, a group,
/// a string that is not UTF-8, a varint past 64 bits, a key in more than five bytes) goes
/// through SwiftProtobuf, so the answer is always SwiftProtobuf's: the tests and the
/// frame fuzzer compare both readings.
package enum ClientFrame: Sendable, Equatable {
    /// `Frame.call`.
    case call(CallFrame)
    /// `Frame.cancel`, naming the call to stop.
    case cancel(callID: UInt64)
    /// A `Reply`, a `GoAway`, or no kind at all: never sent by a client.
    case notFromClient

    /// The frame in `body` (a `chordstore.v1.Frame`, without its length prefix).
    /// - Throws: SwiftProtobuf's error when the bytes are not a `Frame`.
    package init(_ body: ByteBuffer) throws {
        if let read = body.withUnsafeReadableBytes({ ClientFrame.read($0) }) {
            self = read
            return
        }
        let frame = try body.withUnsafeReadableBytes { try Chordstore_V1_Frame(serializedBytes: $0.bytes) }
        self.init(frame)
    }

    /// The same frame, from the message SwiftProtobuf decoded.
    package init(_ frame: Chordstore_V1_Frame) {
        switch frame.kind {
        case .call(let call): self = .call(CallFrame(call))
        case .cancel(let cancel): self = .cancel(callID: cancel.callID)
        case .reply, .goAway, nil: self = .notFromClient
        }
    }

    /// The frame read by hand, or `nil` where SwiftProtobuf must say.
    static func read(_ bytes: UnsafeRawBufferPointer) -> ClientFrame? {
        var reader = ProtoReader(bytes, from: 0, to: bytes.count)
        var frame: ClientFrame?
        while !reader.atEnd {
            guard let (field, wire) = reader.tag() else { return nil }
            switch (field, wire) {
            case (1, .lengthDelimited):
                // A message field given again merges into the one before (protobuf's rule);
                // another kind of the oneof before it is replaced.
                guard let range = reader.lengthDelimited() else { return nil }
                var call = CallFrame()
                if case .call(let earlier) = frame { call = earlier }
                guard call.merge(bytes, range) else { return nil }
                frame = .call(call)
            case (2, .lengthDelimited):
                guard let range = reader.lengthDelimited() else { return nil }
                var callID: UInt64 = 0
                if case .cancel(let earlier) = frame { callID = earlier }
                guard let merged = Self.cancel(bytes, range, callID: callID) else { return nil }
                frame = .cancel(callID: merged)
            case (1...4, _):
                return nil  // a Reply or GoAway, or a known field with another wire type
            default:
                guard reader.skip(wire) else { return nil }
            }
        }
        return frame
    }

    /// A `Cancel`'s call id, merged over `callID`.
    private static func cancel(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, callID: UInt64) -> UInt64? {
        var reader = ProtoReader(bytes, from: range.lowerBound, to: range.upperBound)
        var callID = callID
        while !reader.atEnd {
            guard let (field, wire) = reader.tag() else { return nil }
            switch (field, wire) {
            case (1, .varint):
                guard let value = reader.varint() else { return nil }
                callID = value
            case (1, _):
                return nil
            default:
                guard reader.skip(wire) else { return nil }
            }
        }
        return callID
    }
}

/// A `chordstore.v1.Call`'s fields, as the server reads them (see ``ClientFrame``).
package struct CallFrame: Sendable, Equatable {
    /// Chosen by the client; unique among its calls in flight.
    package var callID: UInt64 = 0
    /// The method's wire name, e.g. `chordstore.v1.ChordStore/AddChordset`.
    package var method = ""
    /// The call's metadata (`authorization`, `session`, ...).
    package var metadata: [String: String] = [:]
    /// The deadline, in microseconds from the server's receipt; 0: none.
    package var timeoutMicros: UInt64 = 0
    /// The method's request message.
    package var payload = Data()
    /// The sequence a read waits for; 0: no wait.
    package var minSequence: UInt64 = 0
    /// The store the call works on; empty: `default`.
    package var store = ""

    /// An empty call (every field at its default).
    package init() {}

    /// The fields of a decoded `Call`.
    package init(_ call: Chordstore_V1_Call) {
        callID = call.callID
        method = call.method
        metadata = call.metadata
        timeoutMicros = call.timeoutMicros
        payload = call.payload
        minSequence = call.minSequence
        store = call.store
    }

    /// Reads a `Call`'s fields in `range` of `bytes` over these; false where SwiftProtobuf
    /// must say.
    mutating func merge(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        var reader = ProtoReader(bytes, from: range.lowerBound, to: range.upperBound)
        while !reader.atEnd {
            guard let (field, wire) = reader.tag() else { return false }
            switch (field, wire) {
            case (1, .varint):
                guard let value = reader.varint() else { return false }
                callID = value
            case (2, .lengthDelimited):
                guard let value = reader.string() else { return false }
                method = value
            case (3, .lengthDelimited):
                guard let entry = reader.lengthDelimited(), let (key, value) = Self.entry(bytes, entry) else { return false }
                metadata[key] = value
            case (4, .varint):
                guard let value = reader.varint() else { return false }
                timeoutMicros = value
            case (5, .lengthDelimited):
                guard let value = reader.lengthDelimited() else { return false }
                payload = Data(UnsafeRawBufferPointer(rebasing: bytes[value]))
            case (6, .varint):
                guard let value = reader.varint() else { return false }
                minSequence = value
            case (7, .lengthDelimited):
                guard let value = reader.string() else { return false }
                store = value
            case (1...7, _):
                return false
            default:
                guard reader.skip(wire) else { return false }
            }
        }
        return true
    }

    /// A `map<string, string>` entry: its key (field 1) and value (field 2), each empty
    /// when left out.
    private static func entry(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> (String, String)? {
        var reader = ProtoReader(bytes, from: range.lowerBound, to: range.upperBound)
        var (key, value) = ("", "")
        while !reader.atEnd {
            guard let (field, wire) = reader.tag() else { return nil }
            switch (field, wire) {
            case (1, .lengthDelimited):
                guard let read = reader.string() else { return nil }
                key = read
            case (2, .lengthDelimited):
                guard let read = reader.string() else { return nil }
                value = read
            case (1...2, _):
                return nil
            default:
                guard reader.skip(wire) else { return nil }
            }
        }
        return (key, value)
    }
}

/// A cursor over protobuf's binary encoding; each read is `nil` where the bytes are not
/// what it can read with certainty.
private struct ProtoReader {
    enum WireType: UInt64 {
        case varint = 0, fixed64 = 1, lengthDelimited = 2, startGroup = 3, endGroup = 4, fixed32 = 5
    }

    private let bytes: UnsafeRawBufferPointer
    private var index: Int
    private let end: Int

    init(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) {
        (self.bytes, self.index, self.end) = (bytes, start, end)
    }

    var atEnd: Bool { index >= end }

    /// A field's number and wire type. A key in more than five bytes (a valid varint
    /// padded with zero groups) is left to SwiftProtobuf everywhere: it refuses one among
    /// a message's fields (its `nextFieldNumber` reads a key of five bytes at most), and
    /// its answer stands wherever it accepts one (a map entry's).
    mutating func tag() -> (UInt64, WireType)? {
        let start = index
        guard let tag = varint(), index - start <= 5, tag <= UInt64(UInt32.max), tag >> 3 != 0,
              let wire = WireType(rawValue: tag & 7) else { return nil }
        return (tag >> 3, wire)
    }

    /// A varint of at most ten bytes that fits 64 bits.
    mutating func varint() -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < end {
            let byte = bytes[index]
            index += 1
            if shift == 63, byte > 1 { return nil }
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
            if shift > 63 { return nil }
        }
        return nil
    }

    /// The range of a length-delimited field's bytes.
    mutating func lengthDelimited() -> Range<Int>? {
        guard let length = varint(), length <= UInt64(end - index) else { return nil }
        let range = index..<(index + Int(length))
        index = range.upperBound
        return range
    }

    /// A length-delimited field as valid UTF-8.
    mutating func string() -> String? {
        guard let range = lengthDelimited() else { return nil }
        return String(validUTF8: UnsafeRawBufferPointer(rebasing: bytes[range]))
    }

    /// Steps over a field not read (not a group: SwiftProtobuf says about those).
    mutating func skip(_ wire: WireType) -> Bool {
        switch wire {
        case .varint: return varint() != nil
        case .lengthDelimited: return lengthDelimited() != nil
        case .fixed64, .fixed32:
            let size = wire == .fixed64 ? 8 : 4
            guard end - index >= size else { return false }
            index += size
            return true
        case .startGroup, .endGroup: return false
        }
    }
}
