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
    package func encode(into envelope: inout Chordstore_V1_EventEnvelope) {
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
        case .store(.created(let id, let name)):
            envelope.storeCreated = .with {
                $0.storeID = id
                $0.name = name
            }
        case .store(.deleted(let id, let name)):
            envelope.storeDeleted = .with {
                $0.storeID = id
                $0.name = name
            }
        case .token(.created(let grant)):
            envelope.tokenCreated = .with {
                $0.tokenID = grant.id
                $0.role = grant.role.proto
                $0.storeID = grant.storeID
                $0.store = grant.storeName
                $0.secretSha256 = Data(grant.secretHash)
            }
        case .token(.revoked(let id)):
            envelope.tokenRevoked = .with { $0.tokenID = id }
        }
    }
}

extension TokenRole {
    /// The role's number in the `TokenRole` enum of events.proto.
    package var protoNumber: UInt64 {
        switch self {
        case .admin: 1
        case .readWrite: 2
        case .readOnly: 3
        }
    }

    /// The role numbered `number` in events.proto (`nil`: unknown, or unspecified).
    package init?(protoNumber number: UInt64) {
        switch number {
        case 1: self = .admin
        case 2: self = .readWrite
        case 3: self = .readOnly
        default: return nil
        }
    }

    /// The wire enum.
    public var proto: Chordstore_V1_TokenRole { Chordstore_V1_TokenRole(rawValue: Int(protoNumber)) ?? .unspecified }

    /// The role of a wire enum (`nil`: unspecified or unknown).
    public init?(proto: Chordstore_V1_TokenRole) {
        self.init(protoNumber: UInt64(max(0, proto.rawValue)))
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
        case .storeCreated(let e):
            self = .store(.created(id: e.storeID, name: e.name))
        case .storeDeleted(let e):
            self = .store(.deleted(id: e.storeID, name: e.name))
        case .tokenCreated(let e):
            guard let role = TokenRole(proto: e.role) else { throw ChordStoreError(.dataLoss, "token \(e.tokenID) has no known role") }
            self = .token(.created(TokenGrant(id: e.tokenID, role: role, storeID: e.storeID, storeName: e.store, secretHash: Array(e.secretSha256))))
        case .tokenRevoked(let e):
            self = .token(.revoked(id: e.tokenID))
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
            checksum: envelope.checksum, mark: Self.mark(envelope), store: envelope.store,
            logSequence: envelope.logSequence == 0 ? envelope.sequence : envelope.logSequence, tokenID: envelope.tokenID)
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

// Messages of the service that carry engine values, both directions: the server answers
// with them, the clients read them.

extension ChordsetOrder {
    /// The wire enum.
    public var proto: Chordstore_V1_ChordsetOrder {
        switch self {
        case .creationDate: .created
        case .index: .index
        case .title: .title
        }
    }

    /// Reads the wire enum (an unknown value is the default order).
    public init(proto: Chordstore_V1_ChordsetOrder) {
        self = switch proto {
        case .index: .index
        case .title: .title
        default: .creationDate
        }
    }
}

extension Profile {
    /// The wire message.
    public var proto: Chordstore_V1_Profile {
        .with {
            $0.chordsets = UInt64(chordsets)
            $0.chords = UInt64(chords)
            $0.controlsChordPresent = hasControlsChord
            $0.lastSequence = lastSequence
        }
    }

    /// Reads the wire message.
    public init(proto: Chordstore_V1_Profile) {
        self.init(
            chordsets: Int(clamping: proto.chordsets), chords: Int(clamping: proto.chords),
            hasControlsChord: proto.controlsChordPresent, lastSequence: proto.lastSequence)
    }
}

extension SessionState {
    /// The wire message (0: no target).
    public var proto: Chordstore_V1_SessionState {
        .with {
            $0.session = session
            $0.undoTarget = undoTarget ?? 0
            $0.redoTarget = redoTarget ?? 0
            $0.redoDepth = UInt64(redoDepth)
        }
    }

    /// Reads the wire message.
    public init(proto: Chordstore_V1_SessionState) {
        self.init(
            session: proto.session, undoTarget: proto.undoTarget == 0 ? nil : proto.undoTarget,
            redoTarget: proto.redoTarget == 0 ? nil : proto.redoTarget, redoDepth: Int(clamping: proto.redoDepth))
    }
}

extension StoreInfo {
    /// The wire message.
    public var proto: Chordstore_V1_StoreInfo {
        .with {
            $0.name = name
            $0.id = id
            if let created { $0.created = created.proto }
            $0.chordsets = UInt64(chordsets)
            $0.chords = UInt64(chords)
            $0.headSequence = headSequence
            $0.logSequence = logSequence
        }
    }

    /// Reads the wire message.
    public init(proto: Chordstore_V1_StoreInfo) {
        self.init(
            name: proto.name, id: proto.id, created: proto.hasCreated ? Instant(proto: proto.created) : nil,
            chordsets: Int(clamping: proto.chordsets), chords: Int(clamping: proto.chords), headSequence: proto.headSequence,
            logSequence: proto.logSequence)
    }
}

extension ChordsetQuery {
    /// The wire request.
    public var proto: Chordstore_V1_QueryRequest {
        .with { request in
            if let title {
                request.title = .with {
                    $0.match = switch title.match {
                    case .equals: .equals
                    case .prefix: .prefix
                    case .contains: .contains
                    }
                    $0.text = title.text
                }
            }
            if let createdFrom { request.createdFrom = .with { $0.micros = createdFrom.microsecondsSince1970 } }
            if let createdBefore { request.createdBefore = .with { $0.micros = createdBefore.microsecondsSince1970 } }
            request.order = order.proto
            request.descending = descending
            request.limit = UInt32(clamping: limit)
            if let cursor { request.cursor = Data(cursor) }
        }
    }

    /// Reads the wire request, its limit (0: `maxLimit`) capped at `maxLimit`.
    public init(proto request: Chordstore_V1_QueryRequest, maxLimit: Int) {
        self.init(
            createdFrom: request.hasCreatedFrom ? Instant(microsecondsSince1970: request.createdFrom.micros) : nil,
            createdBefore: request.hasCreatedBefore ? Instant(microsecondsSince1970: request.createdBefore.micros) : nil,
            order: ChordsetOrder(proto: request.order), descending: request.descending,
            limit: request.limit == 0 ? maxLimit : min(Int(request.limit), maxLimit),
            cursor: request.cursor.isEmpty ? nil : Array(request.cursor))
        if request.hasTitle {
            let match: TitleMatch = switch request.title.match {
            case .prefix: .prefix
            case .contains: .contains
            default: .equals
            }
            title = (match, request.title.text)
        }
    }
}

extension ListDelta {
    /// The wire form.
    public var proto: Chordstore_V1_ListDelta {
        switch self {
        case .insert(let chordset, let index):
            .with { $0.kind = .insert; $0.index = UInt32(index); $0.chordset = chordset.proto }
        case .delete(let index):
            .with { $0.kind = .delete; $0.index = UInt32(index) }
        case .move(let from, let to):
            .with { $0.kind = .move; $0.fromIndex = UInt32(from); $0.index = UInt32(to) }
        case .update(let chordset, let index):
            .with { $0.kind = .update; $0.index = UInt32(index); $0.chordset = chordset.proto }
        }
    }

    /// Reads the wire form; `INVALID_ARGUMENT` for a kind this version does not know, or
    /// a chordset that does not read.
    public init(proto: Chordstore_V1_ListDelta) throws(ChordStoreError) {
        switch proto.kind {
        case .insert: self = .insert(try Chordset(proto: proto.chordset), at: Int(proto.index))
        case .delete: self = .delete(at: Int(proto.index))
        case .move: self = .move(from: Int(proto.fromIndex), to: Int(proto.index))
        case .update: self = .update(try Chordset(proto: proto.chordset), at: Int(proto.index))
        default: throw ChordStoreError(.invalidArgument, "a live query's delta of kind \(proto.kind.rawValue) is not one this version knows")
        }
    }
}

extension RecordedEvent {
    /// Its protobuf envelope, checksum included: the log's record, as the wire and JSON
    /// output carry it.
    public var envelope: Chordstore_V1_EventEnvelope {
        var envelope = Chordstore_V1_EventEnvelope()
        envelope.sequence = sequence
        envelope.epoch = epoch
        envelope.timestamp = timestamp.proto
        envelope.session = session
        envelope.commandID = commandID
        event.encode(into: &envelope)
        envelope.store = store
        if logSequence != sequence { envelope.logSequence = logSequence }
        envelope.tokenID = tokenID
        switch mark {
        case .undoes(let target): envelope.mark = .with { $0.undoes = target }
        case .redoes(let target): envelope.mark = .with { $0.redoes = target }
        case nil: break
        }
        envelope.checksum = checksum
        return envelope
    }
}
