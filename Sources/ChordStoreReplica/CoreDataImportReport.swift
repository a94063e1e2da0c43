public import Foundation

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
    /// Rows left out, by entity; each has a note saying why, or is a chord or colour left
    /// out with its chordset (or a colour with its chord), whose note says so.
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
