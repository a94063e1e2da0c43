import ChordStoreAPI
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import Foundation
import SwiftProtobuf

/// Prints results for people, or as protobuf canonical JSON with `--json`.
enum Output {
    static func print(_ text: String) { Swift.print(text) }
    /// `text` with no line end.
    static func write(_ text: String) { Swift.print(text, terminator: "") }
    /// A note for the reader on standard error (not part of the output proper).
    static func note(_ text: String) { FileHandle.standardError.write(Data("note: \(text)\n".utf8)) }

    static func json(_ message: some SwiftProtobuf.Message) throws {
        Swift.print(try message.jsonString())
    }

    /// The header of a list of chordsets.
    static let chordsetListHeader = "INDEX ID                                    CREATED                      TITLE"

    static func chordsetLine(_ chordset: Chordset) -> String {
        let title = chordset.title.isEmpty ? "(untitled)" : chordset.title
        return "\(pad(String(chordset.index), 5)) \(chordset.id.uuidString)  \(chordset.creationDate)  \(title)"
    }

    static func chordsetList(_ chordsets: [Chordset], json: Bool) throws {
        if json {
            try self.json(Chordstore_V1_ChordsetList.with { $0.chordsets = chordsets.map(\.proto) })
            return
        }
        if chordsets.isEmpty {
            print("no chordsets")
            return
        }
        print(chordsetListHeader)
        for chordset in chordsets { print(chordsetLine(chordset)) }
    }

    static func chordset(_ chordset: Chordset, json: Bool) throws {
        if json { return try self.json(chordset.proto) }
        print("chordset \(chordset.id.uuidString)")
        print("  title    \(chordset.title.isEmpty ? "(untitled)" : chordset.title)")
        print("  created  \(chordset.creationDate)")
        print("  index    \(chordset.index)")
        print("  POS CHORD ID                               BPM     HUE    PURITY BRIGHT ALPHA")
        for chord in chordset.chords { print("  " + chordLine(chord)) }
    }

    static func chordLine(_ chord: Chord) -> String {
        let c = chord.color
        let columns = [c.hue, c.purity, c.brightness].map { pad(number($0), 6) }.joined(separator: " ")
        return "\(pad(String(chord.position), 3)) \(chord.id.uuidString) \(pad(number(chord.bpm), 7)) \(columns) \(number(c.alpha))"
    }

    static func chord(_ chord: Chord, chordsetID: UUID?, json: Bool) throws {
        if json {
            return try self.json(Chordstore_V1_ChordView.with {
                $0.chord = chord.proto
                if let chordsetID { $0.chordsetID = chordsetID.protoBytes }
            })
        }
        print(chordsetID.map { "chord of chordset \($0.uuidString)" } ?? "controls chord")
        print("  POS CHORD ID                               BPM     HUE    PURITY BRIGHT ALPHA")
        print("  " + chordLine(chord))
    }

    static func profile(_ profile: Profile, json: Bool) throws {
        if json {
            return try self.json(Chordstore_V1_Profile.with {
                $0.chordsets = UInt64(profile.chordsets)
                $0.chords = UInt64(profile.chords)
                $0.controlsChordPresent = profile.hasControlsChord
                $0.lastSequence = profile.lastSequence
            })
        }
        let controls = profile.hasControlsChord ? " (8 per chordset + the controls chord)" : " (8 per chordset)"
        print("\(count(profile.chordsets, "chordset")), \(count(profile.chords, "chord"))\(controls); last event \(profile.lastSequence)")
    }

    /// One line describing a recorded event.
    static func eventLine(_ recorded: RecordedEvent) -> String {
        let mark = switch recorded.mark {
        case .undoes(let target): "undo of \(target): "
        case .redoes(let target): "redo of \(target): "
        case nil: ""
        }
        let token = recorded.tokenID.isEmpty ? "" : "  [token \(recorded.tokenID)]"
        return "\(pad(String(recorded.sequence), 8)) \(recorded.timestamp)  \(recorded.session)  \(mark)\(describe(recorded.event))\(token)"
    }

    static func describe(_ event: Event) -> String {
        switch event {
        case .chordsetAdded(let c): "added chordset \(c.id.uuidString) \"\(c.title)\" at index \(c.index)"
        case .chordsetRenamed(let id, let title, let previous): "renamed \(id.uuidString) \"\(previous)\" -> \"\(title)\""
        case .chordsetDeleted(let c): "deleted chordset \(c.id.uuidString) \"\(c.title)\" and its 8 chords"
        case .chordColorSet(let chord, _, let color, _):
            "set colour of chord \(chord.uuidString) to \(number(color.hue)) \(number(color.purity)) \(number(color.brightness)) \(number(color.alpha))"
        case .chordBPMSet(let chord, _, let bpm, let previous): "set bpm of chord \(chord.uuidString) \(number(previous)) -> \(number(bpm))"
        case .controlsChordSet(let chord?, _): "set controls chord \(chord.id.uuidString) bpm \(number(chord.bpm))"
        case .controlsChordSet(nil, _): "cleared the controls chord"
        case .chordsetMoved(let id, let from, let to): "moved \(id.uuidString) from index \(from) to \(to)"
        case .allDeleted(let n): "deleted all chordsets (\(n))"
        case .allRestored(let at, let n): "put back \(count(n, "chordset")) deleted by event \(at)"
        case .store(.created(let id, let name)): "created store \(name) (id \(id))"
        case .store(.deleted(let id, let name)): "deleted store \(name) (id \(id))"
        case .token(.created(let grant)):
            "created \(grant.role.rawValue) token \(grant.id)\(grant.role.isScoped ? " for store \(grant.storeName)" : "")"
        case .token(.revoked(let id)): "revoked token \(id)"
        }
    }

    /// A store on one line: counts, last event, creation.
    static func storeLine(_ info: StoreInfo) -> String {
        let created = info.created.map { "created \($0)" } ?? "no events yet"
        return "\(info.name)  \(info.chordsets) chordsets, \(info.chords) chords, last event \(info.headSequence), \(created)"
    }

    /// A store, after `verb` ("created") when given.
    static func store(_ info: StoreInfo, json: Bool, verb: String? = nil) throws {
        if json { return try Output.json(info.proto) }
        print((verb.map { "\($0) store " } ?? "") + storeLine(info))
    }

    static func number(_ value: Double) -> String {
        value.formatted(.number.precision(.fractionLength(0...3)).grouping(.never))
    }

    /// "1 chord", "2 chords".
    static func count(_ n: Int, _ noun: String) -> String { n == 1 ? "1 \(noun)" : "\(n) \(noun)s" }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}
