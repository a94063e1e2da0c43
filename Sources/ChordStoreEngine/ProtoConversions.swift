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
                if let chord { $0.chord = chord.proto }
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
        case .allRestored(let deletedAt, let count):
            envelope.allRestored = .with {
                $0.deletedAt = deletedAt
                $0.chordsetCount = UInt64(count)
            }
        }
    }
}

// The reading direction, through SwiftProtobuf: used by clients that receive messages
// (the chordstore command against a server) and by the codec tests as their oracle.

extension Instant {
    /// Reads a protobuf `Timestamp`.
    public init(proto: Google_Protobuf_Timestamp) {
        self.init(seconds: proto.seconds, nanos: proto.nanos)
    }
}

extension ChordColor {
    /// Reads a colour message.
    public init(proto: Chordstore_V1_Color) {
        self.init(hue: proto.hue, purity: proto.purity, brightness: proto.brightness, alpha: proto.alpha)
    }
}

extension Chord {
    /// Reads a chord message.
    public init(proto: Chordstore_V1_Chord) throws(ChordStoreError) {
        self.init(
            id: try UUID(protoBytes: proto.id), position: Int(proto.position),
            bpm: proto.bpm, color: ChordColor(proto: proto.color))
    }
}

extension Chordset {
    /// Reads a chordset message.
    public init(proto: Chordstore_V1_Chordset) throws(ChordStoreError) {
        var chords: [Chord] = []
        chords.reserveCapacity(proto.chords.count)
        for chord in proto.chords { chords.append(try Chord(proto: chord)) }
        self.init(
            id: try UUID(protoBytes: proto.id), title: proto.title,
            creationDate: Instant(proto: proto.creationDate), index: Int(proto.index), chords: chords)
    }
}

extension Event {
    /// Reads the event of an envelope.
    public init(envelope: Chordstore_V1_EventEnvelope) throws(ChordStoreError) {
        switch envelope.event {
        case .chordsetAdded(let e):
            self = .chordsetAdded(try Chordset(proto: e.chordset))
        case .chordsetRenamed(let e):
            self = .chordsetRenamed(id: try UUID(protoBytes: e.chordsetID), title: e.title, previousTitle: e.previousTitle)
        case .chordsetDeleted(let e):
            self = .chordsetDeleted(try Chordset(proto: e.chordset))
        case .chordColorSet(let e):
            self = .chordColorSet(
                chordID: try UUID(protoBytes: e.chordID), chordsetID: try Self.optionalID(e.chordsetID),
                color: ChordColor(proto: e.color), previous: ChordColor(proto: e.previousColor))
        case .chordBpmSet(let e):
            self = .chordBPMSet(
                chordID: try UUID(protoBytes: e.chordID), chordsetID: try Self.optionalID(e.chordsetID),
                bpm: e.bpm, previous: e.previousBpm)
        case .controlsChordSet(let e):
            self = .controlsChordSet(e.hasChord ? try Chord(proto: e.chord) : nil, previous: e.hasPrevious ? try Chord(proto: e.previous) : nil)
        case .chordsetMoved(let e):
            self = .chordsetMoved(id: try UUID(protoBytes: e.chordsetID), from: Int(e.fromIndex), to: Int(e.toIndex))
        case .allDeleted(let e):
            self = .allDeleted(count: Int(clamping: e.chordsetCount))
        case .allRestored(let e):
            self = .allRestored(deletedAt: e.deletedAt, count: Int(clamping: e.chordsetCount))
        case nil:
            throw ChordStoreError(.dataLoss, "event \(envelope.sequence) has no event of a known kind")
        }
    }

    private static func optionalID(_ data: Data) throws(ChordStoreError) -> UUID? {
        data.isEmpty ? nil : try UUID(protoBytes: data)
    }
}

extension RecordedEvent {
    /// Reads an event envelope (as a client receives it).
    public init(envelope: Chordstore_V1_EventEnvelope) throws(ChordStoreError) {
        self.init(
            sequence: envelope.sequence, epoch: envelope.epoch, timestamp: Instant(proto: envelope.timestamp),
            session: envelope.session, commandID: envelope.commandID, event: try Event(envelope: envelope),
            checksum: envelope.checksum, mark: Self.mark(envelope))
    }

    private static func mark(_ envelope: Chordstore_V1_EventEnvelope) -> ChangeMark? {
        guard envelope.hasMark else { return nil }
        switch envelope.mark.kind {
        case .undoes(let target): return .undoes(target)
        case .redoes(let target): return .redoes(target)
        case nil: return nil
        }
    }
}
