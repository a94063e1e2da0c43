@testable import ChordStoreEngine
import ChordStoreDomain
import ChordStoreProto
import Foundation
import SwiftProtobuf

// The reading direction of the domain <-> protobuf mapping, through SwiftProtobuf's
// generated code: the oracle the hand-written `WireCodec` is checked against.

extension Instant {
    /// Reads a protobuf `Timestamp`.
    init(proto: Google_Protobuf_Timestamp) {
        self.init(seconds: proto.seconds, nanos: proto.nanos)
    }
}

extension ChordColor {
    /// Reads a colour message.
    init(proto: Chordstore_V1_Color) {
        self.init(hue: proto.hue, purity: proto.purity, brightness: proto.brightness, alpha: proto.alpha)
    }
}

extension Chord {
    /// Reads a chord message.
    init(proto: Chordstore_V1_Chord) throws(ChordStoreError) {
        self.init(
            id: try UUID(protoBytes: proto.id), position: Int(proto.position),
            bpm: proto.bpm, color: ChordColor(proto: proto.color))
    }
}

extension Chordset {
    /// Reads a chordset message.
    init(proto: Chordstore_V1_Chordset) throws(ChordStoreError) {
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
    init(envelope: Chordstore_V1_EventEnvelope) throws(ChordStoreError) {
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
            self = .controlsChordSet(try Chord(proto: e.chord), previous: e.hasPrevious ? try Chord(proto: e.previous) : nil)
        case .chordsetMoved(let e):
            self = .chordsetMoved(id: try UUID(protoBytes: e.chordsetID), from: Int(e.fromIndex), to: Int(e.toIndex))
        case .allDeleted(let e):
            self = .allDeleted(count: Int(clamping: e.chordsetCount))
        case nil:
            throw ChordStoreError(.dataLoss, "event \(envelope.sequence) has no event of a known kind")
        }
    }

    private static func optionalID(_ data: Data) throws(ChordStoreError) -> UUID? {
        data.isEmpty ? nil : try UUID(protoBytes: data)
    }
}
