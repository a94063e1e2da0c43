import ChordStoreDomain
import ChordStoreRecords
import Foundation

/// The writes a Core Data store's rows become, and the report of every rule applied: a
/// pure function of the rows, the options and the device's view (no I/O).
struct CoreDataImportPlan: Sendable {
    /// One write of the import, with the rows it carries (to report them refused).
    struct Write: Sendable {
        var command: Command
        var commandID: String
        var entity: String
        var primaryKey: Int64
        var chords: Int
        var colors: Int
    }

    var writes: [Write] = []
    var report: CoreDataImportReport

    /// The command id of a chordset's add: the same at every import, so the server
    /// records it once whichever device sends it.
    static func commandID(chordset id: UUID) -> String { "core-data/\(id.uuidString.lowercased())" }
    /// The command id of setting the controls chord.
    static func commandID(controls id: UUID) -> String { "core-data/controls/\(id.uuidString.lowercased())" }

    /// An id derived from the store's UUID, the entity, the row's `Z_PK` (and, for a chord
    /// made up to fill a position, the position): a UUID of version 8 whose 128 bits are
    /// XXH64 of `"<store UUID>/<entity>/<Z_PK>[/<position>]"` seeded 0, then seeded 1.
    static func derivedID(store: String, entity: String, primaryKey: Int64, position: Int? = nil) -> UUID {
        let text = "\(store)/\(entity)/\(primaryKey)" + (position.map { "/\($0)" } ?? "")
        var bytes = withUnsafeBytes(of: XXHash64.hash(text.utf8, seed: 0).bigEndian, Array.init)
            + withUnsafeBytes(of: XXHash64.hash(text.utf8, seed: 1).bigEndian, Array.init)
        bytes[6] = bytes[6] & 0x0F | 0x80
        bytes[8] = bytes[8] & 0x3F | 0x80
        return bytes.withUnsafeBytes(StoreKeys.id)
    }

    /// Core Data's reference date, 2001-01-01T00:00:00Z, in microseconds since 1970.
    static let referenceDate = Instant(microsecondsSince1970: 978_307_200_000_000)

    /// Plans the import of `store` into a view whose state is `state`; `ownCommandIDs`
    /// are the command ids of the device's own changes (what it imported before).
    static func make(
        _ store: CoreDataStore, options: CoreDataImportOptions, limits: Limits, state: InMemoryState, ownCommandIDs: Set<String>
    ) throws(CoreDataImportError) -> CoreDataImportPlan {
        var planner = Planner(store: store, options: options, limits: limits, state: state, own: ownCommandIDs)
        planner.plan()
        let adds = planner.result.writes.filter { if case .addChordset = $0.command { true } else { false } }.count
        guard state.chordsetCount() + adds <= limits.maxChordsets else {
            throw CoreDataImportError(
                .tooManyChordsets,
                "the import adds \(adds) chordsets to a store of \(state.chordsetCount()); a store holds at most \(limits.maxChordsets)")
        }
        return planner.result
    }

    /// A refusal by the store's rules of a planned write: its rows move from imported to
    /// skipped, with a note.
    mutating func refused(_ write: Write, _ error: ChordStoreError) {
        report.notes.append(CoreDataImportNote(entity: write.entity, primaryKey: write.primaryKey, rule: .refused, detail: error.message))
        for (entity, count) in [(write.entity, 1), ("Chord", write.chords), ("RLColor", write.colors)] where count > 0 {
            report.rowsImported[entity, default: 0] -= count
            report.rowsSkipped[entity, default: 0] += count
        }
        if case .addChordset = write.command { report.chordsetsAdded -= 1 } else { report.controlsChordSet = false }
    }
}

/// The planning, as one pass over the rows.
private struct Planner {
    let store: CoreDataStore
    let options: CoreDataImportOptions
    let limits: Limits
    let state: InMemoryState
    let own: Set<String>
    var result: CoreDataImportPlan
    /// Ids given so far (a repeated one is derived anew).
    var used: Set<UUID> = []
    var chordsetIDs: [Int64: UUID] = [:]
    var chordIDs: [Int64: UUID] = [:]
    /// `RLColor` rows by `Z_PK`, and which chord each belongs to.
    var colors: [Int64: CoreDataStore.ColorRow] = [:]
    var colorOfChord: [Int64: Int64] = [:]
    var colorsUsed: Set<Int64> = []

    init(store: CoreDataStore, options: CoreDataImportOptions, limits: Limits, state: InMemoryState, own: Set<String>) {
        self.store = store
        self.options = options
        self.limits = limits
        self.state = state
        self.own = own
        result = CoreDataImportPlan(report: CoreDataImportReport(model: store.model, storeUUID: store.uuid, dryRun: options.dryRun))
    }

    mutating func note(_ entity: String, _ pk: Int64, _ rule: CoreDataImportRule, _ detail: String) {
        result.report.notes.append(CoreDataImportNote(entity: entity, primaryKey: pk, rule: rule, detail: detail))
    }

    mutating func count(_ entity: String, imported: Int = 0, skipped: Int = 0) {
        if imported > 0 { result.report.rowsImported[entity, default: 0] += imported }
        if skipped > 0 { result.report.rowsSkipped[entity, default: 0] += skipped }
    }

    mutating func plan() {
        result.report.rowsRead["Chordset"] = store.chordsets.count
        result.report.rowsRead["Chord"] = store.chords.count
        if store.model == .imagePerformer { result.report.rowsRead["RLColor"] = store.colors.count }
        assignIDs()
        for color in store.colors { colors[color.pk] = color }
        for chord in store.chords where chord.color != nil { colorOfChord[chord.pk] = chord.color }
        for color in store.colors {
            if let chord = color.chord, colorOfChord[chord] == nil { colorOfChord[chord] = color.pk }
        }
        var chordsOf: [Int64: [CoreDataStore.ChordRow]] = [:]
        var loose: [CoreDataStore.ChordRow] = []
        let known = Set(store.chordsets.map(\.pk))
        for chord in store.chords {
            if let owner = chord.chordset, known.contains(owner) { chordsOf[owner, default: []].append(chord) } else { loose.append(chord) }
        }
        for chordset in ordered() { add(chordset, chords: chordsOf[chordset.pk] ?? []) }
        controls(loose)
        for color in store.colors where !colorsUsed.contains(color.pk) {
            count("RLColor", skipped: 1)
            note("RLColor", color.pk, .colorUnused, "no chord uses it")
        }
    }

    /// Gives each row its id, in `Z_PK` order: its own, or one derived when it has none,
    /// it cannot be read, or an earlier row has it.
    mutating func assignIDs() {
        func give(_ entity: String, _ pk: Int64, _ id: CoreDataStore.CoreDataID) -> UUID {
            let why: String
            switch id {
            case .uuid(let uuid) where !used.contains(uuid):
                used.insert(uuid)
                return uuid
            case .uuid(let uuid): why = "its id \(uuid) is an earlier row's"
            case .null: why = "its id is NULL"
            case .unreadable(let what): why = "its id is \(what), not a UUID"
            }
            let derived = CoreDataImportPlan.derivedID(store: store.uuid, entity: entity, primaryKey: pk)
            used.insert(derived)
            note(entity, pk, .idFilled, "\(why): it gets \(derived)")
            return derived
        }
        for chordset in store.chordsets { chordsetIDs[chordset.pk] = give("Chordset", chordset.pk, chordset.id) }
        for chord in store.chords { chordIDs[chord.pk] = give("Chord", chord.pk, chord.id) }
    }

    /// The chordsets in the order they are added (the user order): by `index` where the
    /// model has it, then by creation date, then by `Z_PK`.
    func ordered() -> [CoreDataStore.ChordsetRow] {
        store.chordsets.sorted { a, b in
            let keys = { (row: CoreDataStore.ChordsetRow) in
                (row.index ?? .max, instant(row.created) ?? CoreDataImportPlan.referenceDate, row.pk)
            }
            let (x, y) = (keys(a), keys(b))
            if x.0 != y.0 { return x.0 < y.0 }
            if x.1 != y.1 { return x.1 < y.1 }
            return x.2 < y.2
        }
    }

    mutating func add(_ row: CoreDataStore.ChordsetRow, chords rows: [CoreDataStore.ChordRow]) {
        let id = chordsetIDs[row.pk]!
        let commandID = CoreDataImportPlan.commandID(chordset: id)
        let colorRows = rows.compactMap { colorOfChord[$0.pk] }.filter { colors[$0] != nil }
        func skip(_ rule: CoreDataImportRule, _ detail: String) {
            count("Chordset", skipped: 1)
            count("Chord", skipped: rows.count)
            count("RLColor", skipped: colorRows.count)
            colorsUsed.formUnion(colorRows)
            note("Chordset", row.pk, rule, "\(detail); skipped with its \(rows.count) chords")
        }
        if own.contains(commandID) {
            result.report.alreadyImported.append(id)
            return skip(.alreadyImported, "chordset \(id) was imported by this device before")
        }
        if state.chordset(id) != nil {
            result.report.alreadyInStore.append(id)
            return skip(.alreadyInStore, "the store holds chordset \(id) already")
        }
        if state.chordLocation(id) != nil {
            return skip(.refused, "its id \(id) is a chord's of the store")
        }
        var slots: [Int: ChordSpec] = [:]
        var unplaced: [CoreDataStore.ChordRow] = []
        var imported = 0
        var colorsImported = 0
        for chord in rows {
            if let position = chord.position, (0..<Chordset.chordCount).contains(Int(position)), slots[Int(position)] == nil {
                slots[Int(position)] = spec(chord, position: Int(position))
                imported += 1
                if let color = colorOfChord[chord.pk], colors[color] != nil { colorsImported += 1 }
            } else {
                unplaced.append(chord)
            }
        }
        for chord in unplaced {
            let why = chord.position.map { (0..<Chordset.chordCount).contains(Int($0)) ? "position \($0) is an earlier chord's" : "position \($0) is outside 0-7" }
                ?? "its position is NULL"
            if let free = (0..<Chordset.chordCount).first(where: { slots[$0] == nil }) {
                slots[free] = spec(chord, position: free)
                imported += 1
                if let color = colorOfChord[chord.pk], colors[color] != nil { colorsImported += 1 }
                note("Chord", chord.pk, .chordPlaced, "\(why): placed at position \(free) of chordset Z_PK \(row.pk)")
            } else {
                count("Chord", skipped: 1)
                if let color = colorOfChord[chord.pk], colors[color] != nil {
                    colorsUsed.insert(color)
                    count("RLColor", skipped: 1)
                }
                note("Chord", chord.pk, .chordSkipped, "\(why), and chordset Z_PK \(row.pk) has no free position: skipped")
            }
        }
        let missing = (0..<Chordset.chordCount).filter { slots[$0] == nil }
        for position in missing {
            slots[position] = ChordSpec(
                id: CoreDataImportPlan.derivedID(store: store.uuid, entity: "Chord", primaryKey: row.pk, position: position),
                position: position, bpm: limits.defaultBPM, color: options.fillColor)
        }
        if !missing.isEmpty {
            result.report.chordsFilled += missing.count
            note("Chordset", row.pk, .chordFilled, "it has no chord at position \(missing.map(String.init).joined(separator: ", ")): filled with a default chord")
        }
        let add = AddChordset(
            id: id, title: title(row), creationDate: date(row), chords: (0..<Chordset.chordCount).map { slots[$0]! })
        count("Chordset", imported: 1)
        count("Chord", imported: imported)
        count("RLColor", imported: colorsImported)
        result.report.chordsetsAdded += 1
        result.writes.append(CoreDataImportPlan.Write(
            command: .addChordset(add), commandID: commandID, entity: "Chordset", primaryKey: row.pk, chords: imported, colors: colorsImported))
    }

    /// A chord as the store takes it: its id (derived if the store has it elsewhere), its
    /// tempo and its colour, each by its rule.
    mutating func spec(_ chord: CoreDataStore.ChordRow, position: Int) -> ChordSpec {
        var id = chordIDs[chord.pk]!
        if state.chordLocation(id) != nil || state.chordset(id) != nil {
            let derived = CoreDataImportPlan.derivedID(store: store.uuid, entity: "Chord", primaryKey: chord.pk)
            note("Chord", chord.pk, .idFilled, "the store has a chord or chordset with its id \(id): it gets \(derived)")
            id = derived
        }
        return ChordSpec(id: id, position: position, bpm: bpm(chord), color: color(chord))
    }

    mutating func bpm(_ chord: CoreDataStore.ChordRow) -> Double {
        guard let bpm = chord.bpm else {
            note("Chord", chord.pk, .bpmFilled, "its bpm is NULL: it gets \(limits.defaultBPM.formatted())")
            return limits.defaultBPM
        }
        guard bpm.isFinite, bpm >= limits.minBPM, bpm <= limits.maxBPM else {
            note(
                "Chord", chord.pk, .bpmFilled,
                "its bpm \(bpm) is outside \(limits.minBPM.formatted())...\(limits.maxBPM.formatted()): it gets \(limits.defaultBPM.formatted())")
            return limits.defaultBPM
        }
        return bpm
    }

    mutating func color(_ chord: CoreDataStore.ChordRow) -> ChordColor {
        switch store.model {
        case .imager:
            guard let index = chord.colorIndex else {
                note("Chord", chord.pk, .colorFilled, "its bgColor is NULL: it gets the fill colour")
                return options.fillColor
            }
            return fixed(options.imagerColor(Int(clamping: index)), chord: chord.pk, what: "colour index \(index)")
        case .imagePerformer:
            guard let pk = colorOfChord[chord.pk], let row = colors[pk] else {
                note("Chord", chord.pk, .colorFilled, "it has no RLColor: it gets the fill colour")
                return options.fillColor
            }
            colorsUsed.insert(pk)
            var color = options.fillColor
            var nulls: [String] = []
            for field in ChordColorField.allCases {
                guard let value = row.component(field) else {
                    nulls.append(field.rawValue)
                    continue
                }
                switch field {
                case .hue: color.hue = value
                case .purity: color.purity = value
                case .brightness: color.brightness = value
                case .alpha: color.alpha = value
                }
            }
            if !nulls.isEmpty {
                note("RLColor", pk, .colorFixed, "its \(nulls.joined(separator: ", ")) \(nulls.count == 1 ? "is" : "are") NULL: the fill colour's taken")
            }
            return fixed(color, chord: pk, what: "its", entity: "RLColor")
        }
    }

    /// A colour with each component clamped into 0...1 (a NaN takes the fill colour's).
    mutating func fixed(_ color: ChordColor, chord pk: Int64, what: String, entity: String = "Chord") -> ChordColor {
        var fixed = color
        var changed: [String] = []
        func clamp(_ value: inout Double, _ fill: Double, _ name: String) {
            let clamped = value.isNaN ? fill : min(max(value, 0), 1)
            if clamped != value || value.isNaN {
                changed.append("\(name) \(value) → \(clamped)")
                value = clamped
            }
        }
        clamp(&fixed.hue, options.fillColor.hue, "hue")
        clamp(&fixed.purity, options.fillColor.purity, "purity")
        clamp(&fixed.brightness, options.fillColor.brightness, "brightness")
        clamp(&fixed.alpha, options.fillColor.alpha, "alpha")
        if !changed.isEmpty { note(entity, pk, .colorFixed, "\(what) \(changed.joined(separator: ", ")) (outside 0...1)") }
        return fixed
    }

    mutating func title(_ row: CoreDataStore.ChordsetRow) -> String {
        guard var title = row.title else {
            note("Chordset", row.pk, .titleFilled, "its title is NULL: it gets the empty title")
            return ""
        }
        if title.unicodeScalars.contains(where: Validation.isForbiddenInTitle) {
            title = String(String.UnicodeScalarView(title.unicodeScalars.map { Validation.isForbiddenInTitle($0) ? " " : $0 }))
            note("Chordset", row.pk, .titleCleaned, "its title has control characters (a line break): each became a space")
        }
        if title.count > limits.maxTitleCharacters || title.utf8.count > limits.maxTitleBytes {
            var cut = ""
            for character in title {
                guard cut.count < limits.maxTitleCharacters, cut.utf8.count + character.utf8.count <= limits.maxTitleBytes else { break }
                cut.append(character)
            }
            note(
                "Chordset", row.pk, .titleTruncated,
                "its title is \(title.count) characters (\(title.utf8.count) bytes): cut to \(cut.count) (the store's limit is \(limits.maxTitleCharacters) characters, \(limits.maxTitleBytes) bytes)")
            title = cut
        }
        return title
    }

    /// Core Data's seconds since its reference date as an instant, if the store can keep it.
    func instant(_ seconds: Double?) -> Instant? {
        guard let seconds else { return nil }
        let micros = (seconds * 1_000_000).rounded()
        guard micros.isFinite, let offset = Int64(exactly: micros) else { return nil }
        let (sum, overflow) = CoreDataImportPlan.referenceDate.microsecondsSince1970.addingReportingOverflow(offset)
        let instant = Instant(microsecondsSince1970: sum)
        guard !overflow, (try? Validation(limits: limits).checkCreationDate(instant)) != nil else { return nil }
        return instant
    }

    mutating func date(_ row: CoreDataStore.ChordsetRow) -> Instant {
        if let instant = instant(row.created) { return instant }
        if let seconds = row.created {
            note("Chordset", row.pk, .dateFilled, "its creationDate \(seconds) s after 2001 is outside years 1-9999: it gets 2001-01-01T00:00:00Z")
        } else {
            note("Chordset", row.pk, .dateFilled, "its creationDate is NULL: it gets 2001-01-01T00:00:00Z (Core Data's reference date)")
        }
        return CoreDataImportPlan.referenceDate
    }

    /// Image Performer's controls chord: the first chord (by `Z_PK`) that belongs to no
    /// chordset. Every other chord without a chordset is an orphan, skipped.
    mutating func controls(_ loose: [CoreDataStore.ChordRow]) {
        var rest = loose
        if store.model == .imagePerformer, let first = loose.firstIndex(where: { $0.chordset == nil }) {
            let chord = rest.remove(at: first)
            setControls(chord)
        }
        for chord in rest {
            count("Chord", skipped: 1)
            if let color = colorOfChord[chord.pk], colors[color] != nil {
                colorsUsed.insert(color)
                count("RLColor", skipped: 1)
            }
            let why = chord.chordset.map { "its chordset Z_PK \($0) does not exist" }
                ?? (store.model == .imager ? "it belongs to no chordset (Imager has no controls chord)" : "it belongs to no chordset, and an earlier one is the controls chord")
            note("Chord", chord.pk, .chordOrphaned, "\(why): skipped")
        }
    }

    mutating func setControls(_ chord: CoreDataStore.ChordRow) {
        let hasColor = colorOfChord[chord.pk].flatMap { colors[$0] } != nil
        var id = chordIDs[chord.pk]!
        let current = state.controlsChord()
        if current?.id != id, state.chordLocation(id) != nil || state.chordset(id) != nil {
            let derived = CoreDataImportPlan.derivedID(store: store.uuid, entity: "Chord", primaryKey: chord.pk)
            note("Chord", chord.pk, .idFilled, "the store has a chord or chordset with its id \(id): it gets \(derived)")
            id = derived
        }
        let commandID = CoreDataImportPlan.commandID(controls: id)
        func keep(_ rule: CoreDataImportRule, _ detail: String) {
            count("Chord", skipped: 1)
            if hasColor, let color = colorOfChord[chord.pk] {
                colorsUsed.insert(color)
                count("RLColor", skipped: 1)
            }
            note("Chord", chord.pk, rule, detail)
        }
        if own.contains(commandID) { return keep(.alreadyImported, "the controls chord \(id) was imported by this device before") }
        if let current {
            let detail = current.id == id
                ? "the store's controls chord is this one (\(id)) already" : "the store has its own controls chord (\(current.id)): it is kept"
            return keep(.controlsKept, detail)
        }
        let bpm = bpm(chord)
        let color = color(chord)
        count("Chord", imported: 1)
        count("RLColor", imported: hasColor ? 1 : 0)
        result.report.controlsChordSet = true
        result.writes.append(CoreDataImportPlan.Write(
            command: .setControlsChord(SetControlsChord(id: id, bpm: bpm, color: color)), commandID: commandID, entity: "Chord",
            primaryKey: chord.pk, chords: 0, colors: hasColor ? 1 : 0))
    }
}
