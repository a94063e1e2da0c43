public import Foundation
public import ChordStoreDomain
public import ChordStoreProto
public import SwiftProtobuf

// Conversions between the domain values and their protobuf messages. Decoding throws
// `dataLoss` because a malformed stored message means a damaged store; the wire layer
// maps the same failures to `invalidArgument` for client input.

extension UUID {
    /// The 16 raw bytes, as protobuf `bytes` ids carry them.
    public var protoBytes: Data {
        withUnsafeBytes(of: uuid) { Data($0) }
    }

    /// Reads a 16-byte protobuf id.
    public init(protoBytes data: Data) throws(ChordStoreError) {
        guard data.count == 16 else {
            throw ChordStoreError(.dataLoss, "an id is \(data.count) bytes; ids are 16")
        }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { $0.copyBytes(from: data) }
        self.init(uuid: value)
    }
}

extension Instant {
    /// The instant as a protobuf `Timestamp`.
    public var proto: Google_Protobuf_Timestamp {
        let (seconds, nanos) = secondsAndNanos
        return Google_Protobuf_Timestamp(seconds: seconds, nanos: nanos)
    }

}

extension ChordColor {
    /// The colour as its protobuf message.
    public var proto: Chordstore_V1_Color {
        var message = Chordstore_V1_Color()
        message.hue = hue
        message.purity = purity
        message.brightness = brightness
        message.alpha = alpha
        return message
    }
}

extension Chord {
    /// The chord as its protobuf message.
    public var proto: Chordstore_V1_Chord {
        var message = Chordstore_V1_Chord()
        message.id = id.protoBytes
        message.position = UInt32(position)
        message.bpm = bpm
        message.color = color.proto
        return message
    }
}

extension Chordset {
    /// The chordset as its protobuf message.
    public var proto: Chordstore_V1_Chordset {
        var message = Chordstore_V1_Chordset()
        message.id = id.protoBytes
        message.title = title
        message.creationDate = creationDate.proto
        message.index = UInt32(index)
        message.chords = chords.map(\.proto)
        return message
    }
}

extension Event {
    /// Sets the envelope's `event` oneof to this event.
    func encode(into envelope: inout Chordstore_V1_EventEnvelope) {
        switch self {
        case .chordsetAdded(let chordset):
            envelope.chordsetAdded = .with { $0.chordset = chordset.proto }
        case .chordsetRenamed(let id, let title, let previous):
            envelope.chordsetRenamed = .with {
                $0.chordsetID = id.protoBytes
                $0.title = title
                $0.previousTitle = previous
            }
        case .chordsetDeleted(let chordset):
            envelope.chordsetDeleted = .with { $0.chordset = chordset.proto }
        case .chordColorSet(let chordID, let chordsetID, let color, let previous):
            envelope.chordColorSet = .with {
                $0.chordID = chordID.protoBytes
                $0.chordsetID = chordsetID?.protoBytes ?? Data()
                $0.color = color.proto
                $0.previousColor = previous.proto
            }
        case .chordBPMSet(let chordID, let chordsetID, let bpm, let previous):
            envelope.chordBpmSet = .with {
                $0.chordID = chordID.protoBytes
                $0.chordsetID = chordsetID?.protoBytes ?? Data()
                $0.bpm = bpm
                $0.previousBpm = previous
            }
        case .controlsChordSet(let chord, let previous):
            envelope.controlsChordSet = .with {
                $0.chord = chord.proto
                if let previous { $0.previous = previous.proto }
            }
        case .chordsetMoved(let id, let from, let to):
            envelope.chordsetMoved = .with {
                $0.chordsetID = id.protoBytes
                $0.fromIndex = UInt32(from)
                $0.toIndex = UInt32(to)
            }
        case .allDeleted(let count):
            envelope.allDeleted = .with { $0.chordsetCount = UInt64(count) }
        }
    }
}
