public import ChordStoreDomain

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

    /// The code and the message, as `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}
