/// How a list of chordsets is ordered.
public enum ChordsetOrder: String, Sendable, CaseIterable {
    /// Oldest first by creation date, then by id: the seed app's list order.
    case creationDate = "created"
    /// The user's own order (``ChordStoreDomain/Chordset/index``).
    case index
    /// By title, localized and case-insensitive, then by creation date.
    case title
}
