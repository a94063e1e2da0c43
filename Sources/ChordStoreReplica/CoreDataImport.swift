public import ChordStoreDomain
public import Foundation

/// The Core Data model a store was written by (seeds 000–002).
public enum CoreDataModel: String, Sendable, Hashable {
    /// Imager: `Chordset {id, title, creationDate}` with `Chord {id, position, bpm,
    /// bgColor}`, the colour a 16-bit index.
    case imager
    /// Image Performer: `Chordset {id, title, creationDate, index}`, `Chord` and
    /// `RLColor` (a chord's background colour); the controls chord belongs to no chordset.
    case imagePerformer = "image-performer"
}

/// A component of a ``ChordStoreDomain/ChordColor``: what a column of Image Performer's
/// `RLColor` holds.
public enum ChordColorField: String, Sendable, Hashable, CaseIterable {
    /// ``ChordStoreDomain/ChordColor/hue``.
    case hue
    /// ``ChordStoreDomain/ChordColor/purity`` (saturation).
    case purity
    /// ``ChordStoreDomain/ChordColor/brightness``.
    case brightness
    /// ``ChordStoreDomain/ChordColor/alpha``.
    case alpha
}

/// How ``Replica/importCoreDataStore(at:options:)`` reads and maps a Core Data store.
public struct CoreDataImportOptions: Sendable {
    /// Read the store and report what an import would do, writing nothing.
    public var dryRun = false
    /// Image Performer's `RLColor` columns, named where their names do not say which
    /// component they hold: column (as the table names it, `ZSAT`, or as the model does,
    /// `sat`; any case) to component. Columns named `ZHUE`, `ZPURITY` or `ZSATURATION`,
    /// `ZBRIGHTNESS`, `ZALPHA` or `ZOPACITY` need no entry.
    public var colorColumns: [String: ChordColorField] = [:]
    /// How an Imager colour index becomes a colour; ``imagerHueWheel(_:)`` by default.
    public var imagerColor: @Sendable (Int) -> ChordColor = CoreDataImportOptions.imagerHueWheel
    /// The colour of a chord that has none (no `RLColor` row, a NULL index), and the
    /// components a NULL column of `RLColor` takes: opaque black by default.
    public var fillColor = ChordColor(hue: 0, purity: 0, brightness: 0, alpha: 1)

    /// The default options.
    public init() {}

    /// Imager's colour index as a colour: a step of a 360-step colour wheel (index
    /// modulo 360, negative indexes counted back from 360, divided by 360), fully
    /// saturated, bright and opaque. Imager used the index to give chords "some variety"
    /// before it had a colour model (seed 001); this keeps each index's colour apart.
    @Sendable public static func imagerHueWheel(_ index: Int) -> ChordColor {
        let step = ((index % 360) + 360) % 360
        return ChordColor(hue: Double(step) / 360, purity: 1, brightness: 1, alpha: 1)
    }
}

/// What a Core Data import did (or, dry, would do): every row read is imported or
/// reported with the rule that handled it.
public struct CoreDataImportReport: Sendable, Hashable {
    /// The model the store was recognised as.
    public var model: CoreDataModel
    /// The store's `NSStoreUUID` (`Z_METADATA`), from which missing ids are derived.
    public var storeUUID: String
    /// Whether nothing was written.
    public var dryRun: Bool
    /// Rows read, by entity (`Chordset`, `Chord`, `RLColor`).
    public var rowsRead: [String: Int] = [:]
    /// Rows that became part of the store (a chordset, a chord, a colour), by entity.
    public var rowsImported: [String: Int] = [:]
    /// Rows left out, by entity; each has a note saying why.
    public var rowsSkipped: [String: Int] = [:]
    /// Chordsets queued (or, dry, that would be).
    public var chordsetsAdded = 0
    /// Chords made up to fill a chordset's missing positions.
    public var chordsFilled = 0
    /// Whether the controls chord was set (or, dry, would be).
    public var controlsChordSet = false
    /// Writes queued for the server (none when dry).
    public var writesQueued = 0
    /// Chordsets this device imported before (their command ids are among its changes):
    /// not added again.
    public var alreadyImported: [UUID] = []
    /// Chordsets whose ids the store already holds, not from an import of this device:
    /// not added.
    public var alreadyInStore: [UUID] = []
    /// Every row that was not imported exactly as read, with the rule that handled it.
    public var notes: [CoreDataImportNote] = []

    /// Creates an empty report.
    public init(model: CoreDataModel, storeUUID: String, dryRun: Bool) {
        self.model = model
        self.storeUUID = storeUUID
        self.dryRun = dryRun
    }

    /// Whether every row read is counted as imported or skipped.
    public var accountsForEveryRow: Bool {
        rowsRead.allSatisfy { entity, read in rowsImported[entity, default: 0] + rowsSkipped[entity, default: 0] == read }
    }
}

/// One row of the Core Data store that was not imported exactly as read.
public struct CoreDataImportNote: Sendable, Hashable {
    /// The entity (`Chordset`, `Chord`, `RLColor`).
    public var entity: String
    /// The row's `Z_PK`.
    public var primaryKey: Int64
    /// The rule that handled it.
    public var rule: CoreDataImportRule
    /// What was found and what was done, for people.
    public var detail: String

    /// Creates a note.
    public init(entity: String, primaryKey: Int64, rule: CoreDataImportRule, detail: String) {
        self.entity = entity
        self.primaryKey = primaryKey
        self.rule = rule
        self.detail = detail
    }
}

/// The rules of a Core Data import (docs/DEVICES.md, "Coming from Core Data"): what is
/// filled, what is skipped, what is refused. Each names what it did in a note.
public enum CoreDataImportRule: String, Sendable, Hashable, CaseIterable {
    /// A NULL title became the empty title (the apps show `title ?? ""`).
    case titleFilled = "title-filled"
    /// Control characters of a title (a line break) became spaces.
    case titleCleaned = "title-cleaned"
    /// A title longer than the store allows was cut at a character boundary.
    case titleTruncated = "title-truncated"
    /// A NULL (or unrepresentable) creation date became Core Data's reference date,
    /// 2001-01-01T00:00:00Z, where a Core Data sort by date puts a NULL: first.
    case dateFilled = "date-filled"
    /// A NULL, unreadable or repeated id became one derived from the store's UUID, the
    /// entity and the row's `Z_PK` (the same at every import).
    case idFilled = "id-filled"
    /// A chordset's missing position got a chord: derived id, default tempo, fill colour.
    case chordFilled = "chord-filled"
    /// A chord without a position, outside 0–7, or at one an earlier chord (by `Z_PK`)
    /// of its chordset holds moved to its chordset's lowest free position.
    case chordPlaced = "chord-placed"
    /// A chord that needed a position when its chordset had none free: skipped.
    case chordSkipped = "chord-skipped"
    /// A chord that belongs to no chordset and is not the controls chord: skipped.
    case chordOrphaned = "chord-orphaned"
    /// A NULL tempo, or one outside the store's range (a scalar never set reads 0),
    /// became the default tempo.
    case bpmFilled = "bpm-filled"
    /// A chord with no colour got the fill colour.
    case colorFilled = "color-filled"
    /// A colour component that was NULL took the fill colour's; one outside 0–1 was
    /// clamped into it.
    case colorFixed = "color-fixed"
    /// An `RLColor` row no chord uses: skipped.
    case colorUnused = "color-unused"
    /// A chordset this device imported before: skipped (with its chords and colours).
    case alreadyImported = "already-imported"
    /// A chordset whose id the store holds, not from an import of this device: skipped.
    case alreadyInStore = "already-in-store"
    /// The store has a controls chord already, another or changed since: it is kept.
    case controlsKept = "controls-kept"
    /// The store's rules refused the row as mapped (the note says why): skipped.
    case refused
}

/// Why a Core Data store could not be imported. Nothing was written.
public struct CoreDataImportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of failure.
    public enum Code: String, Sendable, Hashable {
        /// The file does not exist.
        case notFound
        /// The file is not an SQLite database, or cannot be read.
        case unreadable
        /// The database is not a Core Data store (no `Z_PRIMARYKEY`, no `Z_METADATA`).
        case notCoreData
        /// The store is not one of the seed models (no `Chordset` and `Chord`
        /// entities, or a column they need is missing): ``columnsFound`` lists what is there.
        case unknownModel
        /// `RLColor`'s columns do not say which holds which component:
        /// ``columnsFound`` lists them; name them in ``CoreDataImportOptions/colorColumns``.
        case colorColumns
        /// The import would take the store over its limit of chordsets.
        case tooManyChordsets
        /// The replica could not store the writes (nothing was queued), or is read-only.
        case storage
    }

    /// What failed.
    public var code: Code
    /// A sentence for people.
    public var message: String
    /// For ``Code/unknownModel`` and ``Code/colorColumns``: the entities or columns found.
    public var columnsFound: [String]

    /// Creates an error.
    public init(_ code: Code, _ message: String, columnsFound: [String] = []) {
        self.code = code
        self.message = message
        self.columnsFound = columnsFound
    }

    /// The nearest status code (docs/PROTOCOL.md §3), for tools that report codes.
    public var statusCode: ChordStoreError.Code {
        switch code {
        case .notFound: .notFound
        case .unreadable, .notCoreData, .unknownModel, .colorColumns: .invalidArgument
        case .tooManyChordsets: .resourceExhausted
        case .storage: .unavailable
        }
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
