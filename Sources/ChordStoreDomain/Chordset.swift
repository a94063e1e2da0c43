public import Foundation

/// A chordset: a titled group of exactly ``chordCount`` chords, the apps' "voice" at a time.
public struct Chordset: Sendable, Hashable, Identifiable {
    /// The number of chords every chordset has, at positions `0..<chordCount`.
    public static let chordCount = 8

    /// The chordset's identity.
    public var id: UUID
    /// The editable title (may be empty).
    public var title: String
    /// When the chordset was created; lists order by it by default.
    public var creationDate: Instant
    /// The chordset's place in the user's own order, `0..<count` with no gaps.
    public var index: Int
    /// The chords, always ``chordCount`` of them, sorted by position.
    public var chords: [Chord]

    /// Creates a chordset value. The fold and validation keep `chords` at eight, sorted.
    public init(id: UUID, title: String, creationDate: Instant, index: Int, chords: [Chord]) {
        self.id = id
        self.title = title
        self.creationDate = creationDate
        self.index = index
        self.chords = chords
    }
}
