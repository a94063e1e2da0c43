import ChordStoreDomain
import Foundation

/// The planning, as one pass over the rows.
struct CoreDataImportPlanner {
    let file: CoreDataFile
    let options: CoreDataImportOptions
    let limits: Limits
    let state: InMemoryState
    let own: Set<String>
    var result: CoreDataImportPlan
    /// Ids given so far (a repeated one is derived anew).
    var used: Set<UUID> = []
    var chordsetIDs: [Int64: UUID] = [:]
    var chordIDs: [Int64: UUID] = [:]
    /// `RLColor` rows by `Z_PK`, and the one each chord links to (`Chord.bgColor`, else
    /// the first whose `RLColor.chord` names it; only rows that exist).
    var colors: [Int64: CoreDataFile.ColorRow] = [:]
    var colorOfChord: [Int64: Int64] = [:]

    init(file: CoreDataFile, options: CoreDataImportOptions, limits: Limits, state: InMemoryState, own: Set<String>) {
        self.file = file
        self.options = options
        self.limits = limits
        self.state = state
        self.own = own
        result = CoreDataImportPlan(report: CoreDataImportReport(model: file.model, storeUUID: file.uuid, dryRun: options.dryRun))
    }

    mutating func note(_ entity: String, _ pk: Int64, _ rule: CoreDataImportRule, _ detail: String) {
        result.report.notes.append(CoreDataImportNote(entity: entity, primaryKey: pk, rule: rule, detail: detail))
    }

    /// Records that the colour of `chord` (if it has one) is imported with it, or left out
    /// with it (unless another chord imports it); returns its `Z_PK`.
    @discardableResult
    mutating func useColor(of chord: Int64, imported: Bool) -> Int64? {
        guard let color = colorOfChord[chord] else { return nil }
        result.colorUse[color] = (result.colorUse[color] ?? false) || imported
        return color
    }

    /// ", with its RLColor Z_PK n" for a note of a chord left out, when it has a colour.
    func with(_ color: Int64?) -> String { color.map { ", with its RLColor Z_PK \($0)" } ?? "" }

    mutating func count(_ entity: String, imported: Int = 0, skipped: Int = 0) {
        if imported > 0 { result.report.rowsImported[entity, default: 0] += imported }
        if skipped > 0 { result.report.rowsSkipped[entity, default: 0] += skipped }
    }

    mutating func plan() {
        result.report.rowsRead[CoreDataEntity.chordset] = file.chordsets.count
        result.report.rowsRead[CoreDataEntity.chord] = file.chords.count
        if file.model == .imagePerformer { result.report.rowsRead[CoreDataEntity.color] = file.colors.count }
        assignIDs()
        for color in file.colors { colors[color.pk] = color }
        for chord in file.chords {
            if let color = chord.color, colors[color] != nil { colorOfChord[chord.pk] = color }
        }
        let chordPKs = Set(file.chords.map(\.pk))
        for color in file.colors {
            if let chord = color.chord, chordPKs.contains(chord), colorOfChord[chord] == nil { colorOfChord[chord] = color.pk }
        }
        var chordsOf: [Int64: [CoreDataFile.ChordRow]] = [:]
        var loose: [CoreDataFile.ChordRow] = []
        let known = Set(file.chordsets.map(\.pk))
        for chord in file.chords {
            if let owner = chord.chordset, known.contains(owner) { chordsOf[owner, default: []].append(chord) } else { loose.append(chord) }
        }
        for chordset in ordered() { add(chordset, chords: chordsOf[chordset.pk] ?? []) }
        controls(loose)
        let linked = Set(colorOfChord.values)
        for color in file.colors where !linked.contains(color.pk) {
            result.colorsUnused += 1
            note(CoreDataEntity.color, color.pk, .colorUnused, "no chord uses it")
        }
    }

    /// An id derived from `text` (``CoreDataImportPlan/derivedID(_:)``) that no row of the
    /// import has, nor, `avoidingStore`, the store: the first free of `text`, `text/1`,
    /// `text/2`, … The same rows into the same store derive the same ids, which is what
    /// makes a second import of a chordset without an id find it (a chordset's is derived
    /// without looking at the store for that reason).
    mutating func derive(_ text: String, avoidingStore: Bool) -> UUID {
        var attempt = 0
        while true {
            let id = CoreDataImportPlan.derivedID(attempt == 0 ? text : "\(text)/\(attempt)")
            attempt += 1
            if used.contains(id) { continue }
            if avoidingStore, state.chordset(id) != nil || state.chordLocation(id) != nil { continue }
            used.insert(id)
            return id
        }
    }

    /// Gives each row its id, in `Z_PK` order: its own, or one derived when it has none,
    /// it cannot be read, or an earlier row has it.
    mutating func assignIDs() {
        func give(_ entity: String, _ pk: Int64, _ id: CoreDataFile.CoreDataID) -> UUID {
            let why: String
            switch id {
            case .uuid(let uuid) where !used.contains(uuid):
                used.insert(uuid)
                return uuid
            case .uuid(let uuid): why = "its id \(uuid) is an earlier row's"
            case .null: why = "its id is NULL"
            case .unreadable(let what): why = "its id is \(what), not a UUID"
            }
            let derived = derive("\(file.uuid)/\(entity)/\(pk)", avoidingStore: false)
            note(entity, pk, .idFilled, "\(why): it gets \(derived)")
            return derived
        }
        for chordset in file.chordsets { chordsetIDs[chordset.pk] = give(CoreDataEntity.chordset, chordset.pk, chordset.id) }
        for chord in file.chords { chordIDs[chord.pk] = give(CoreDataEntity.chord, chord.pk, chord.id) }
    }

    /// The chordsets in the order they are added (the user order): by `index` where the
    /// model has it, then by creation date, then by `Z_PK`.
    func ordered() -> [CoreDataFile.ChordsetRow] {
        file.chordsets.sorted { a, b in
            let keys = { (row: CoreDataFile.ChordsetRow) in
                (row.index ?? .max, instant(row.created) ?? CoreDataImportPlan.referenceDate, row.pk)
            }
            let (x, y) = (keys(a), keys(b))
            if x.0 != y.0 { return x.0 < y.0 }
            if x.1 != y.1 { return x.1 < y.1 }
            return x.2 < y.2
        }
    }

    mutating func add(_ row: CoreDataFile.ChordsetRow, chords rows: [CoreDataFile.ChordRow]) {
        var id = chordsetIDs[row.pk]!
        if state.chordset(id) == nil, state.chordLocation(id) != nil {
            let derived = derive("\(file.uuid)/\(CoreDataEntity.chordset)/\(row.pk)", avoidingStore: false)
            note(CoreDataEntity.chordset, row.pk, .idFilled, "the store has a chord with its id \(id): it gets \(derived)")
            id = derived
        }
        let commandID = CoreDataImportPlan.commandID(chordset: id)
        func skip(_ rule: CoreDataImportRule, _ detail: String) {
            count(CoreDataEntity.chordset, skipped: 1)
            count(CoreDataEntity.chord, skipped: rows.count)
            for chord in rows { useColor(of: chord.pk, imported: false) }
            note(CoreDataEntity.chordset, row.pk, rule, "\(detail); skipped with its \(rows.count) chords and their colours")
        }
        if own.contains(commandID) {
            result.report.alreadyImported.append(id)
            return skip(.alreadyImported, "chordset \(id) was imported by this device before")
        }
        if state.chordset(id) != nil {
            result.report.alreadyInStore.append(id)
            return skip(.alreadyInStore, "the store holds chordset \(id) already")
        }
        var slots: [Int: ChordSpec] = [:]
        var unplaced: [CoreDataFile.ChordRow] = []
        var imported = 0
        var colorsImported: [Int64] = []
        for chord in rows {
            if let position = chord.position, (0..<Chordset.chordCount).contains(Int(position)), slots[Int(position)] == nil {
                slots[Int(position)] = spec(chord, position: Int(position))
                imported += 1
                if let color = useColor(of: chord.pk, imported: true) { colorsImported.append(color) }
            } else {
                unplaced.append(chord)
            }
        }
        for chord in unplaced {
            let why = chord.position.map { (0..<Chordset.chordCount).contains(Int($0)) ? "position \($0) is an earlier chord's" : "position \($0) is outside 0-7" }
                ?? "its position is NULL (or not an integer)"
            if let free = (0..<Chordset.chordCount).first(where: { slots[$0] == nil }) {
                slots[free] = spec(chord, position: free)
                imported += 1
                if let color = useColor(of: chord.pk, imported: true) { colorsImported.append(color) }
                note(CoreDataEntity.chord, chord.pk, .chordPlaced, "\(why): placed at position \(free) of chordset Z_PK \(row.pk)")
            } else {
                count(CoreDataEntity.chord, skipped: 1)
                let color = useColor(of: chord.pk, imported: false)
                note(CoreDataEntity.chord, chord.pk, .chordSkipped, "\(why), and chordset Z_PK \(row.pk) has no free position: skipped\(with(color))")
            }
        }
        let missing = (0..<Chordset.chordCount).filter { slots[$0] == nil }
        for position in missing {
            slots[position] = ChordSpec(
                id: derive("\(file.uuid)/\(CoreDataEntity.chord)/\(row.pk)/\(position)", avoidingStore: true),
                position: position, bpm: limits.defaultBPM, color: options.fillColor)
        }
        if !missing.isEmpty {
            result.report.chordsFilled += missing.count
            note(CoreDataEntity.chordset, row.pk, .chordFilled, "it has no chord at position \(missing.map(String.init).joined(separator: ", ")): filled with a default chord")
        }
        let add = AddChordset(
            id: id, title: title(row), creationDate: date(row), chords: (0..<Chordset.chordCount).map { slots[$0]! })
        count(CoreDataEntity.chordset, imported: 1)
        count(CoreDataEntity.chord, imported: imported)
        result.report.chordsetsAdded += 1
        result.writes.append(CoreDataImportPlan.Write(
            command: .addChordset(add), commandID: commandID, entity: CoreDataEntity.chordset,
            primaryKey: row.pk, chords: imported, filled: missing.count, colors: colorsImported))
    }

    /// A chord as the store takes it: its id (derived if the store has it elsewhere), its
    /// tempo and its colour, each by its rule.
    mutating func spec(_ chord: CoreDataFile.ChordRow, position: Int) -> ChordSpec {
        var id = chordIDs[chord.pk]!
        if state.chordLocation(id) != nil || state.chordset(id) != nil {
            let derived = derive("\(file.uuid)/\(CoreDataEntity.chord)/\(chord.pk)", avoidingStore: true)
            note(CoreDataEntity.chord, chord.pk, .idFilled, "the store has a chord or chordset with its id \(id): it gets \(derived)")
            id = derived
        }
        return ChordSpec(id: id, position: position, bpm: bpm(chord), color: color(chord))
    }

    /// Image Performer's controls chord: the first chord (by `Z_PK`) that belongs to no
    /// chordset. Every other chord without a chordset is an orphan, skipped.
    mutating func controls(_ loose: [CoreDataFile.ChordRow]) {
        var rest = loose
        if file.model == .imagePerformer, let first = loose.firstIndex(where: { $0.chordset == nil }) {
            let chord = rest.remove(at: first)
            setControls(chord)
        }
        for chord in rest {
            count(CoreDataEntity.chord, skipped: 1)
            let color = useColor(of: chord.pk, imported: false)
            let why = chord.chordset.map { "its chordset Z_PK \($0) does not exist" }
                ?? (file.model == .imager ? "it belongs to no chordset (Imager has no controls chord)" : "it belongs to no chordset, and an earlier one is the controls chord")
            note(CoreDataEntity.chord, chord.pk, .chordOrphaned, "\(why): skipped\(with(color))")
        }
    }

    mutating func setControls(_ chord: CoreDataFile.ChordRow) {
        var id = chordIDs[chord.pk]!
        let current = state.controlsChord()
        if current?.id != id, state.chordLocation(id) != nil || state.chordset(id) != nil {
            let derived = derive("\(file.uuid)/\(CoreDataEntity.chord)/\(chord.pk)", avoidingStore: true)
            note(CoreDataEntity.chord, chord.pk, .idFilled, "the store has a chord or chordset with its id \(id): it gets \(derived)")
            id = derived
        }
        let commandID = CoreDataImportPlan.commandID(controls: id)
        func keep(_ rule: CoreDataImportRule, _ detail: String) {
            count(CoreDataEntity.chord, skipped: 1)
            let color = useColor(of: chord.pk, imported: false)
            note(CoreDataEntity.chord, chord.pk, rule, detail + with(color))
        }
        if own.contains(commandID) { return keep(.alreadyImported, "the controls chord \(id) was imported by this device before") }
        if let current {
            let detail = current.id == id
                ? "the store's controls chord is this one (\(id)) already" : "the store has its own controls chord (\(current.id)): it is kept"
            return keep(.controlsKept, detail)
        }
        let bpm = bpm(chord)
        let color = color(chord)
        count(CoreDataEntity.chord, imported: 1)
        let used = useColor(of: chord.pk, imported: true)
        result.report.controlsChordSet = true
        result.writes.append(CoreDataImportPlan.Write(
            command: .setControlsChord(SetControlsChord(id: id, bpm: bpm, color: color)), commandID: commandID, entity: CoreDataEntity.chord,
            primaryKey: chord.pk, chords: 0, filled: 0, colors: used.map { [$0] } ?? []))
    }
}
