import ChordStoreAPI
package import ChordStoreDomain
package import Foundation

/// Hand-written protobuf encoding and decoding of the domain values, byte-compatible with
/// the messages of `proto/` (the generated code stays the schema's reference, used for
/// JSON output and to test this codec). Used wherever speed matters: every commit, every
/// view read, verify and rebuild.
package enum WireCodec {
    // MARK: Writing

    package static func write(_ w: inout ProtoWriter, id field: Int, _ id: UUID) {
        withUnsafeBytes(of: id.uuid) { w.bytes(field, $0) }
    }

    package static func write(_ w: inout ProtoWriter, _ color: ChordColor) {
        w.appendInline(maxBytes: 4 * 9) { write(&$0, color) }
    }

    /// A colour's fields, on the stack.
    private static func write(_ w: inout InlineProtoWriter, _ color: ChordColor) {
        w.double(1, color.hue)
        w.double(2, color.purity)
        w.double(3, color.brightness)
        w.double(4, color.alpha)
    }

    package static func write(_ w: inout ProtoWriter, _ chord: Chord) {
        w.appendInline(maxBytes: maxChordBytes) { write(&$0, chord) }
    }

    /// A `Chord` message as the field `field` of the message being written.
    package static func write(_ w: inout ProtoWriter, field: Int, _ chord: Chord) {
        w.appendInline(maxBytes: maxChordBytes + 2) { inline in inline.shortMessage(field) { write(&$0, chord) } }
    }

    /// The most bytes a `Chord` message takes: its id (18), position (at most 11), bpm
    /// (9) and colour (2 + 4 × 9).
    static let maxChordBytes = 18 + 11 + 9 + 38

    /// A chord's fields, on the stack (a chordset writes eight: they were most of the
    /// cost of encoding an add).
    private static func write(_ w: inout InlineProtoWriter, _ chord: Chord) {
        w.id(1, chord.id)
        w.uint(2, UInt64(chord.position))
        w.double(3, chord.bpm)
        w.shortMessage(4) { write(&$0, chord.color) }
    }

    package static func write(_ w: inout ProtoWriter, _ instant: Instant) {
        let (seconds, nanos) = instant.secondsAndNanos
        w.int(1, seconds)
        w.int(2, Int64(nanos))
    }

    /// A `Chordset` message; the index is left out when `withIndex` is false (view records
    /// keep the index in their own database).
    package static func write(_ w: inout ProtoWriter, _ chordset: Chordset, withIndex: Bool = true) {
        write(&w, id: 1, chordset.id)
        w.string(2, chordset.title)
        w.message(3) { write(&$0, chordset.creationDate) }
        if withIndex { w.uint(4, UInt64(chordset.index)) }
        for chord in chordset.chords { write(&w, field: 5, chord) }
    }

    /// The bytes of a view record: a `Chordset` message without its index.
    package static func chordsetRecord(_ chordset: Chordset) -> [UInt8] {
        var w = ProtoWriter(capacity: 640)
        write(&w, chordset, withIndex: false)
        return w.bytes
    }

    /// A `Chordset` message from a view record (which has no index) and the index: the
    /// record's bytes as they are, then field 4. Fields may come in any order, so this is
    /// the message a reader gets, without decoding and encoding it again.
    package static func chordsetMessage(record: UnsafeRawBufferPointer, index: Int) -> [UInt8] {
        var w = ProtoWriter(capacity: record.count + 8)
        w.raw(record)
        w.uint(4, UInt64(index))
        return w.bytes
    }

    /// The bytes of a `Chordset` message, index included.
    package static func chordsetMessage(_ chordset: Chordset) -> [UInt8] {
        var w = ProtoWriter(capacity: 640)
        write(&w, chordset)
        return w.bytes
    }

    /// The bytes of a `Chord` message.
    package static func chordRecord(_ chord: Chord) -> [UInt8] {
        var w = ProtoWriter(capacity: 80)
        write(&w, chord)
        return w.bytes
    }

    /// An `EventEnvelope` without its checksum.
    package static func envelope(_ recorded: RecordedEvent) -> [UInt8] {
        var w = ProtoWriter(capacity: recorded.event.isAdd ? 720 : 160)
        w.uint(1, recorded.sequence)
        w.uint(2, recorded.epoch)
        w.message(3) { write(&$0, recorded.timestamp) }
        w.string(4, recorded.session)
        w.string(5, recorded.commandID)
        write(&w, recorded.event)
        switch recorded.mark {
        case .undoes(let target): w.message(14) { $0.uint(1, target) }
        case .redoes(let target): w.message(14) { $0.uint(2, target) }
        case nil: break
        }
        if recorded.store != 0 { w.uint(17, UInt64(recorded.store)) }
        if recorded.logSequence != recorded.sequence { w.uint(18, recorded.logSequence) }
        if !recorded.tokenID.isEmpty { w.string(23, recorded.tokenID) }
        return w.bytes
    }

    private static func write(_ w: inout ProtoWriter, _ event: Event) {
        switch event {
        case .chordsetAdded(let chordset):
            w.message(6) { inner in inner.message(1) { write(&$0, chordset) } }
        case .chordsetRenamed(let id, let title, let previous):
            w.message(7) {
                write(&$0, id: 1, id)
                $0.string(2, title)
                $0.string(3, previous)
            }
        case .chordsetDeleted(let chordset):
            w.message(8) { inner in inner.message(1) { write(&$0, chordset) } }
        case .chordColorSet(let chordID, let chordsetID, let color, let previous):
            w.message(9) { inner in
                write(&inner, id: 1, chordID)
                if let chordsetID { write(&inner, id: 2, chordsetID) }
                inner.message(3) { write(&$0, color) }
                inner.message(4) { write(&$0, previous) }
            }
        case .chordBPMSet(let chordID, let chordsetID, let bpm, let previous):
            w.message(10) {
                write(&$0, id: 1, chordID)
                if let chordsetID { write(&$0, id: 2, chordsetID) }
                $0.double(3, bpm)
                $0.double(4, previous)
            }
        case .controlsChordSet(let chord, let previous):
            w.message(11) { inner in
                if let chord { write(&inner, field: 1, chord) }
                if let previous { write(&inner, field: 2, previous) }
            }
        case .chordsetMoved(let id, let from, let to):
            w.message(12) {
                write(&$0, id: 1, id)
                $0.uint(2, UInt64(from))
                $0.uint(3, UInt64(to))
            }
        case .allDeleted(let count):
            w.message(13) { $0.uint(1, UInt64(count)) }
        case .allRestored(let deletedAt, let count):
            w.message(16) {
                $0.uint(1, deletedAt)
                $0.uint(2, UInt64(count))
            }
        case .store(let change):
            let field = if case .created = change { 19 } else { 20 }
            w.message(field) {
                $0.uint(1, UInt64(change.id))
                $0.string(2, change.name)
            }
        case .token(.created(let grant)):
            w.message(21) { inner in
                inner.string(1, grant.id)
                inner.uint(2, UInt64(grant.role.protoNumber))
                inner.uint(3, UInt64(grant.storeID))
                inner.string(4, grant.storeName)
                grant.secretHash.withUnsafeBytes { inner.bytes(5, $0) }
            }
        case .token(.revoked(let id)):
            w.message(22) { $0.string(1, id) }
        }
    }

    // MARK: Reading

    package static func readID(_ raw: UnsafeRawBufferPointer) throws(ChordStoreError) -> UUID {
        guard raw.count == 16 else { throw ChordStoreError(.dataLoss, "an id is \(raw.count) bytes; ids are 16") }
        return StoreKeys.id(raw)
    }

    package static func readColor(_ raw: UnsafeRawBufferPointer) throws(ChordStoreError) -> ChordColor {
        var r = ProtoReader(raw)
        var color = ChordColor(hue: 0, purity: 0, brightness: 0, alpha: 0)
        while let (field, wire) = try r.next() {
            switch field {
            case 1...4:
                try r.expect(wire, 1, field: field)
                let value = try r.double()
                switch field {
                case 1: color.hue = value
                case 2: color.purity = value
                case 3: color.brightness = value
                default: color.alpha = value
                }
            default: try r.skip(wire)
            }
        }
        return color
    }

    package static func readChord(_ raw: UnsafeRawBufferPointer) throws(ChordStoreError) -> Chord {
        var r = ProtoReader(raw)
        var id: UUID?
        var chord = Chord(id: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), position: 0, bpm: 0,
                          color: ChordColor(hue: 0, purity: 0, brightness: 0, alpha: 0))
        while let (field, wire) = try r.next() {
            switch field {
            case 1: try r.expect(wire, 2, field: 1); id = try readID(try r.lengthDelimited())
            case 2: try r.expect(wire, 0, field: 2); chord.position = try r.uint32()
            case 3: try r.expect(wire, 1, field: 3); chord.bpm = try r.double()
            case 4: try r.expect(wire, 2, field: 4); chord.color = try readColor(try r.lengthDelimited())
            default: try r.skip(wire)
            }
        }
        guard let id else { throw ChordStoreError(.dataLoss, "a chord has no id") }
        guard (0..<Chordset.chordCount).contains(chord.position) else {
            throw ChordStoreError(.dataLoss, "chord \(id) has position \(chord.position)")
        }
        chord.id = id
        return chord
    }

    package static func readInstant(_ raw: UnsafeRawBufferPointer) throws(ChordStoreError) -> Instant {
        var r = ProtoReader(raw)
        var seconds: Int64 = 0
        var nanos: Int32 = 0
        while let (field, wire) = try r.next() {
            switch field {
            case 1: try r.expect(wire, 0, field: 1); seconds = Int64(bitPattern: try r.varint())
            case 2: try r.expect(wire, 0, field: 2); nanos = Int32(truncatingIfNeeded: try r.varint())
            default: try r.skip(wire)
            }
        }
        // The protobuf Timestamp range (years 1 to 9999); outside it a record is damaged.
        guard (-62_135_596_800...253_402_300_799).contains(seconds), (0..<1_000_000_000).contains(nanos) else {
            throw ChordStoreError(.dataLoss, "a timestamp (\(seconds) s, \(nanos) ns) is outside the protobuf range")
        }
        return Instant(seconds: seconds, nanos: nanos)
    }

    package static func readChordset(_ raw: UnsafeRawBufferPointer) throws(ChordStoreError) -> Chordset {
        var r = ProtoReader(raw)
        var id: UUID?
        var title = ""
        var created = Instant(microsecondsSince1970: 0)
        var index = 0
        var chords: [Chord] = []
        chords.reserveCapacity(Chordset.chordCount)
        while let (field, wire) = try r.next() {
            switch field {
            case 1: try r.expect(wire, 2, field: 1); id = try readID(try r.lengthDelimited())
            case 2: try r.expect(wire, 2, field: 2); title = try r.string()
            case 3: try r.expect(wire, 2, field: 3); created = try readInstant(try r.lengthDelimited())
            case 4: try r.expect(wire, 0, field: 4); index = try r.uint32()
            case 5: try r.expect(wire, 2, field: 5); chords.append(try readChord(try r.lengthDelimited()))
            default: try r.skip(wire)
            }
        }
        guard let id else { throw ChordStoreError(.dataLoss, "a chordset has no id") }
        // Compared in place: this runs for every chordset read and every add folded.
        guard chords.count == Chordset.chordCount, chords.indices.allSatisfy({ chords[$0].position == $0 }) else {
            throw ChordStoreError(.dataLoss, "chordset \(id) has chords at positions \(chords.map(\.position))")
        }
        return Chordset(id: id, title: title, creationDate: created, index: index, chords: chords)
    }

    /// What a replay needs of a log record, read into `fields`: the event, the session and
    /// undo mark (for the undo stacks), the command id, the places, the time and the
    /// token, skipping the envelope's other fields. Every field of `fields` is set (an
    /// array's element is filled in place, not copied in: a replay reads a million); on a
    /// throw, none is.
    package static func readReplayFields(_ raw: UnsafeRawBufferPointer, into fields: inout ReplayFields) throws(ChordStoreError) {
        var r = ProtoReader(raw)
        var event: Event?
        var sequence: UInt64 = 0, logSequence: UInt64?, store: UInt32 = 0
        var timestamp = Instant(microsecondsSince1970: 0)
        var session = "", commandID = "", tokenID = ""
        var mark: ChangeMark?
        while let (field, wire) = try r.next() {
            switch field {
            case 1: try r.expect(wire, 0, field: 1); sequence = try r.varint()
            case 3: try r.expect(wire, 2, field: 3); timestamp = try readInstant(try r.lengthDelimited())
            case 17: try r.expect(wire, 0, field: 17); store = try readStoreID(try r.varint())
            case 18: try r.expect(wire, 0, field: 18); logSequence = try r.varint()
            case 4: try r.expect(wire, 2, field: 4); session = try r.string()
            case 5: try r.expect(wire, 2, field: 5); commandID = try r.string()
            case 23: try r.expect(wire, 2, field: 23); tokenID = try readTokenID(try r.string())
            case 6...13, 16, 19...22: try r.expect(wire, 2, field: field); event = try readEvent(field, try r.lengthDelimited())
            case 14: try r.expect(wire, 2, field: 14); mark = try readMark(try r.lengthDelimited())
            default: try r.skip(wire)
            }
        }
        guard let event else { throw ChordStoreError(.dataLoss, "a record has no event of a known kind") }
        // Each field moved in from its local: no copy of the whole.
        fields.event = event
        fields.session = session
        fields.commandID = commandID
        fields.mark = mark
        fields.store = store
        fields.sequence = sequence
        fields.logSequence = logSequence ?? sequence
        fields.timestamp = timestamp
        fields.tokenID = tokenID
    }

    /// A record's place: its sequence in its store, its store and its log position (fields
    /// 1, 17 and 18; the last is field 1 when absent), skipping every other field.
    package static func readPlace(_ raw: UnsafeRawBufferPointer) throws(ChordStoreError) -> (sequence: UInt64, store: UInt32, logSequence: UInt64) {
        var r = ProtoReader(raw)
        var sequence: UInt64 = 0, store: UInt32 = 0
        var logSequence: UInt64?
        while let (field, wire) = try r.next() {
            switch field {
            case 1: try r.expect(wire, 0, field: 1); sequence = try r.varint()
            case 17: try r.expect(wire, 0, field: 17); store = try readStoreID(try r.varint())
            case 18: try r.expect(wire, 0, field: 18); logSequence = try r.varint()
            default: try r.skip(wire)
            }
        }
        return (sequence, store, logSequence ?? sequence)
    }

    /// A record's place in the whole log: its log sequence (field 18, else its sequence),
    /// epoch and timestamp, skipping the event.
    package static func readLogPlace(_ raw: UnsafeRawBufferPointer) throws(ChordStoreError) -> (logSequence: UInt64, epoch: UInt64, timestamp: Instant) {
        var r = ProtoReader(raw)
        var sequence: UInt64 = 0, epoch: UInt64 = 0
        var timestamp = Instant(microsecondsSince1970: 0)
        var logSequence: UInt64?
        while let (field, wire) = try r.next() {
            switch field {
            case 1: try r.expect(wire, 0, field: 1); sequence = try r.varint()
            case 2: try r.expect(wire, 0, field: 2); epoch = try r.varint()
            case 3: try r.expect(wire, 2, field: 3); timestamp = try readInstant(try r.lengthDelimited())
            case 18: try r.expect(wire, 0, field: 18); logSequence = try r.varint()
            default: try r.skip(wire)
            }
        }
        return (logSequence ?? sequence, epoch, timestamp)
    }

    /// A record's epoch (field 2; 0 if absent), read up to that field only.
    package static func readEpoch(_ raw: UnsafeRawBufferPointer) throws(ChordStoreError) -> UInt64 {
        var r = ProtoReader(raw)
        while let (field, wire) = try r.next() {
            if field == 2 {
                try r.expect(wire, 0, field: 2)
                return try r.varint()
            }
            if field > 2 { return 0 }  // fields are written in order: no epoch
            try r.skip(wire)
        }
        return 0
    }

    package static func readMark(_ raw: UnsafeRawBufferPointer) throws(ChordStoreError) -> ChangeMark? {
        var r = ProtoReader(raw)
        var mark: ChangeMark?
        while let (field, wire) = try r.next() {
            switch field {
            case 1: try r.expect(wire, 0, field: 1); mark = .undoes(try r.varint())
            case 2: try r.expect(wire, 0, field: 2); mark = .redoes(try r.varint())
            default: try r.skip(wire)
            }
        }
        return mark
    }

    /// Decodes a log record (an `EventEnvelope`, checksum included).
    package static func readEnvelope(_ raw: UnsafeRawBufferPointer) throws(ChordStoreError) -> RecordedEvent {
        var r = ProtoReader(raw)
        var recorded = RecordedEvent(
            sequence: 0, epoch: 0, timestamp: Instant(microsecondsSince1970: 0), session: "", commandID: "",
            event: .allDeleted(count: 0), checksum: 0)
        var event: Event?
        var logSequence: UInt64?
        while let (field, wire) = try r.next() {
            switch field {
            case 1: try r.expect(wire, 0, field: 1); recorded.sequence = try r.varint()
            case 2: try r.expect(wire, 0, field: 2); recorded.epoch = try r.varint()
            case 3: try r.expect(wire, 2, field: 3); recorded.timestamp = try readInstant(try r.lengthDelimited())
            case 4: try r.expect(wire, 2, field: 4); recorded.session = try r.string()
            case 5: try r.expect(wire, 2, field: 5); recorded.commandID = try r.string()
            case 6...13, 16, 19...22: try r.expect(wire, 2, field: field); event = try readEvent(field, try r.lengthDelimited())
            case 14: try r.expect(wire, 2, field: 14); recorded.mark = try readMark(try r.lengthDelimited())
            case 15: try r.expect(wire, 1, field: 15); recorded.checksum = try r.fixed64()
            case 17: try r.expect(wire, 0, field: 17); recorded.store = try readStoreID(try r.varint())
            case 18: try r.expect(wire, 0, field: 18); logSequence = try r.varint()
            case 23: try r.expect(wire, 2, field: 23); recorded.tokenID = try readTokenID(try r.string())
            default: try r.skip(wire)
            }
        }
        guard let event else {
            throw ChordStoreError(.dataLoss, "event \(recorded.sequence) has no event of a known kind")
        }
        recorded.event = event
        recorded.logSequence = logSequence ?? recorded.sequence
        return recorded
    }

    private static func readEvent(_ kind: Int, _ raw: UnsafeRawBufferPointer) throws(ChordStoreError) -> Event {
        var r = ProtoReader(raw)
        // Field slots shared by the event messages (see events.proto); each kind reads the
        // ones it declares and skips the rest.
        var id1: UUID?, id2: UUID?
        var string1 = "", string2 = "", string3 = "", string4 = ""
        var bytes5: [UInt8] = []
        var number1: UInt64 = 0, number2: UInt64 = 0, number3: UInt64 = 0
        var double3 = 0.0, double4 = 0.0
        let zero = ChordColor(hue: 0, purity: 0, brightness: 0, alpha: 0)
        var color3 = zero, color4 = zero
        var chordset: Chordset?
        var chord1: Chord?, chord2: Chord?
        while let (field, wire) = try r.next() {
            switch (kind, field, wire) {
            case (6, 1, 2), (8, 1, 2): chordset = try readChordset(try r.lengthDelimited())
            case (7, 1, 2), (9, 1, 2), (10, 1, 2), (12, 1, 2): id1 = try readID(try r.lengthDelimited())
            case (9, 2, 2), (10, 2, 2):
                let raw = try r.lengthDelimited()
                id2 = raw.isEmpty ? nil : try readID(raw)
            case (7, 2, 2): string2 = try r.string()
            case (7, 3, 2): string3 = try r.string()
            case (9, 3, 2): color3 = try readColor(try r.lengthDelimited())
            case (9, 4, 2): color4 = try readColor(try r.lengthDelimited())
            case (10, 3, 1): double3 = try r.double()
            case (10, 4, 1): double4 = try r.double()
            case (11, 1, 2): chord1 = try readChord(try r.lengthDelimited())
            case (11, 2, 2): chord2 = try readChord(try r.lengthDelimited())
            case (13, 1, 0), (16, 1, 0), (19, 1, 0), (20, 1, 0): number1 = try r.varint()
            case (19, 2, 2), (20, 2, 2): string2 = try r.string()
            case (21, 1, 2), (22, 1, 2): string1 = try r.string()
            case (21, 2, 0): number2 = try r.varint()
            case (21, 3, 0): number3 = try r.varint()
            case (21, 4, 2): string4 = try r.string()
            case (21, 5, 2): bytes5 = Array(try r.lengthDelimited())
            case (16, 2, 0): number2 = try r.varint()
            case (12, 2, 0): number2 = try r.varint()
            case (12, 3, 0): number3 = try r.varint()
            default: try r.skip(wire)
            }
        }
        func required<T>(_ value: T?, _ what: String) throws(ChordStoreError) -> T {
            guard let value else { throw ChordStoreError(.dataLoss, "an event lacks its \(what)") }
            return value
        }
        switch kind {
        case 6: return .chordsetAdded(try required(chordset, "chordset"))
        case 8: return .chordsetDeleted(try required(chordset, "chordset"))
        case 7: return .chordsetRenamed(id: try required(id1, "chordset id"), title: string2, previousTitle: string3)
        case 9: return .chordColorSet(chordID: try required(id1, "chord id"), chordsetID: id2, color: color3, previous: color4)
        case 10: return .chordBPMSet(chordID: try required(id1, "chord id"), chordsetID: id2, bpm: double3, previous: double4)
        case 11: return .controlsChordSet(chord1, previous: chord2)
        case 12:
            return .chordsetMoved(
                id: try required(id1, "chordset id"), from: Int(UInt32(truncatingIfNeeded: number2)),
                to: Int(UInt32(truncatingIfNeeded: number3)))
        case 16: return .allRestored(deletedAt: number1, count: Int(clamping: number2))
        case 19, 20:
            let id = try readStoreID(number1)
            try StoreName.check(string2)
            return .store(kind == 19 ? .created(id: id, name: string2) : .deleted(id: id, name: string2))
        case 21:
            try TokenGrant.checkID(string1)
            guard let role = TokenRole(protoNumber: number2) else { throw ChordStoreError(.dataLoss, "token \(string1) has role \(number2), which no version defines") }
            guard bytes5.count == 32 else { throw ChordStoreError(.dataLoss, "token \(string1) has a \(bytes5.count)-byte secret hash; SHA-256 is 32") }
            guard role.isScoped || (number3 == 0 && string4.isEmpty) else { throw ChordStoreError(.dataLoss, "admin token \(string1) names a store") }
            if role.isScoped { try StoreName.check(string4) }
            return .token(.created(TokenGrant(id: string1, role: role, storeID: try readStoreID(number3), storeName: string4, secretHash: bytes5)))
        case 22:
            try TokenGrant.checkID(string1)
            return .token(.revoked(id: string1))
        default: return .allDeleted(count: Int(clamping: number1))
        }
    }

    /// The id of the token that made a record, checked against the rule for ids.
    private static func readTokenID(_ id: String) throws(ChordStoreError) -> String {
        do {
            try TokenGrant.checkID(id)
        } catch {
            throw ChordStoreError(.dataLoss, "a record names token '\(id.prefix(40))', which is no token id")
        }
        return id
    }

    /// Whether a record is an event of the whole server (a store's or a token's creation
    /// or deletion), read from its top-level fields only.
    package static func holdsServerEvent(_ raw: UnsafeRawBufferPointer) -> Bool {
        var r = ProtoReader(raw)
        while let (field, wire) = try? r.next() {
            if (19...22).contains(field) { return true }
            guard (try? r.skip(wire)) != nil else { return false }
        }
        return false
    }

    /// A store id as the log holds it (a varint), checked to fit.
    private static func readStoreID(_ value: UInt64) throws(ChordStoreError) -> UInt32 {
        guard let id = UInt32(exactly: value) else { throw ChordStoreError(.dataLoss, "a record names store \(value), past the largest store id") }
        return id
    }
}

/// The fields of a log record a replay folds.
package struct ReplayFields: Sendable {
    package var event: Event
    package var session: String
    package var commandID: String
    package var mark: ChangeMark?
    /// The store (0: `default`), the event's sequence in it and its place in the log.
    package var store: UInt32 = 0
    package var sequence: UInt64 = 0
    package var logSequence: UInt64 = 0
    /// The commit time.
    package var timestamp = Instant(microsecondsSince1970: 0)
    /// The token whose call made the event (empty: none).
    package var tokenID = ""

    /// No event's fields: what ``WireCodec/readReplayFields(_:into:)`` fills in.
    package static let empty = ReplayFields(event: .allDeleted(count: 0), session: "", commandID: "", mark: nil)

    package init(
        event: Event, session: String, commandID: String, mark: ChangeMark?, store: UInt32 = 0, sequence: UInt64 = 0,
        logSequence: UInt64 = 0, timestamp: Instant = Instant(microsecondsSince1970: 0), tokenID: String = ""
    ) {
        self.event = event
        self.session = session
        self.commandID = commandID
        self.mark = mark
        self.store = store
        self.sequence = sequence
        self.logSequence = logSequence
        self.timestamp = timestamp
        self.tokenID = tokenID
    }
}

extension Event {
    /// Whether this event carries a whole chordset (and so encodes large).
    package var isAdd: Bool {
        switch self {
        case .chordsetAdded, .chordsetDeleted: true
        default: false
        }
    }
}
