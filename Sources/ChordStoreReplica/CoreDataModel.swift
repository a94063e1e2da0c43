/// The Core Data model a store was written by (seeds 000–002).
public enum CoreDataModel: String, Sendable, Hashable {
    /// Imager: `Chordset {id, title, creationDate}` with `Chord {id, position, bpm,
    /// bgColor}`, the colour a 16-bit index.
    case imager
    /// Image Performer: `Chordset {id, title, creationDate, index}`, `Chord` and
    /// `RLColor` (a chord's background colour); the controls chord belongs to no chordset.
    case imagePerformer = "image-performer"
}
