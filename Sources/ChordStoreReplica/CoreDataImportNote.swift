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
