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
        /// Chord rows it imports (for the controls chord: none besides its own row).
        var chords: Int
        /// Chords it makes up to fill positions.
        var filled: Int
        /// The `RLColor` rows it imports.
        var colors: [Int64]
    }

    var writes: [Write] = []
    var report: CoreDataImportReport
    /// Each `RLColor` row a chord links to: whether an imported chord uses it (else it
    /// was left out with its chord). Rows in neither are `color-unused`.
    var colorUse: [Int64: Bool] = [:]
    /// `RLColor` rows no chord links to.
    var colorsUnused = 0

    /// The command id of a chordset's add: the same at every import, so the server
    /// records it once whichever device sends it.
    static func commandID(chordset id: UUID) -> String { "core-data/\(id.uuidString.lowercased())" }
    /// The command id of setting the controls chord.
    static func commandID(controls id: UUID) -> String { "core-data/controls/\(id.uuidString.lowercased())" }

    /// An id derived from `text` (`"<store UUID>/<entity>/<Z_PK>"`, and more: see
    /// ``CoreDataImportPlanner/derive(_:avoidingStore:)``): a UUID of version 8 whose 128
    /// bits are XXH64 of the text seeded 0, then seeded 1.
    static func derivedID(_ text: String) -> UUID {
        var bytes = withUnsafeBytes(of: XXHash64.hash(text.utf8, seed: 0).bigEndian, Array.init)
            + withUnsafeBytes(of: XXHash64.hash(text.utf8, seed: 1).bigEndian, Array.init)
        bytes[6] = bytes[6] & 0x0F | 0x80
        bytes[8] = bytes[8] & 0x3F | 0x80
        return bytes.withUnsafeBytes(StoreKeys.id)
    }

    /// Core Data's reference date, 2001-01-01T00:00:00Z, in microseconds since 1970.
    static let referenceDate = Instant(microsecondsSince1970: 978_307_200_000_000)

    /// Plans the import of `file` into a view whose state is `state`; `ownCommandIDs`
    /// are the command ids of the device's own changes (what it imported before).
    static func make(
        _ file: CoreDataFile, options: CoreDataImportOptions, limits: Limits, state: InMemoryState, ownCommandIDs: Set<String>
    ) throws(CoreDataImportError) -> CoreDataImportPlan {
        var planner = CoreDataImportPlanner(file: file, options: options, limits: limits, state: state, own: ownCommandIDs)
        planner.plan()
        planner.result.countColors()
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
        for (entity, count) in [(write.entity, 1), (CoreDataEntity.chord, write.chords)] where count > 0 {
            report.rowsImported[entity, default: 0] -= count
            report.rowsSkipped[entity, default: 0] += count
        }
        for color in write.colors { colorUse[color] = false }
        countColors()
        if case .addChordset = write.command {
            report.chordsetsAdded -= 1
            report.chordsFilled -= write.filled
        } else {
            report.controlsChordSet = false
        }
    }

    /// Counts the `RLColor` rows: each once, imported if an imported chord uses it.
    mutating func countColors() {
        guard report.model == .imagePerformer else { return }
        let imported = colorUse.values.filter { $0 }.count
        report.rowsImported[CoreDataEntity.color] = imported
        report.rowsSkipped[CoreDataEntity.color] = colorUse.count - imported + colorsUnused
    }
}

/// The entities the import reads, as Core Data names them (the report's keys).
enum CoreDataEntity {
    static let chordset = "Chordset"
    static let chord = "Chord"
    static let color = "RLColor"
}
