import ChordStoreAPI
public import ChordStoreDomain
import ChordStoreProto
import SwiftProtobuf
public import Foundation

/// The changes of the client's store, in the domain's terms: each returns the event the
/// server recorded (or, for an add, the chordset made), and throws a ``ClientError`` with
/// the server's code and reason (docs/PROTOCOL.md §3).
///
/// ```swift
/// let client = Client(host: "127.0.0.1", port: 7420, credentials: ClientCredentials(token: token))
/// let verse = try await client.addChordset(title: "Verse")
/// try await client.renameChordset(verse.id, to: "Chorus")
/// try await client.undo()
/// ```
extension Client {
    /// Runs `command` on the client's store and returns the event the server recorded.
    @discardableResult
    public func execute(_ command: Command, options: WriteOptions = WriteOptions()) async throws(ClientError) -> RecordedEvent {
        let context = Chordstore_V1_CommandContext.with {
            $0.session = options.session ?? ""
            $0.commandID = options.commandID ?? UUID().uuidString
            if let revision = options.expectedRevision { $0.expected = .with { $0.revision = revision } }
            $0.durability = switch options.durability {
            case .local?: .local
            case .quorum?: .quorum
            case nil: .default
            }
        }
        let request = CommandMessages.request(for: command, context: context)
        guard let method = MethodSpec.command(for: request)?.method else {
            throw ClientError(.internal, "no method is declared for a \(type(of: request).protoMessageName)")
        }
        let reply = try await call(method, request, timeout: options.timeout, as: Chordstore_V1_CommandReply.self)
        return try Self.decoded { () throws in try RecordedEvent(envelope: reply.event) }
    }

    /// `AddChordset`: a chordset with eight chords, at their default colours and tempo
    /// unless `chords` says (none, or all eight positions); returns it as the server made
    /// it (its ids, creation date and place).
    public func addChordset(
        title: String, id: UUID? = nil, creationDate: Instant? = nil, chords: [ChordSpec] = [], options: WriteOptions = WriteOptions()
    ) async throws(ClientError) -> Chordset {
        let recorded = try await execute(
            .addChordset(AddChordset(id: id, title: title, creationDate: creationDate, chords: chords)), options: options)
        guard case .chordsetAdded(let chordset) = recorded.event else {
            throw ClientError(.internal, "the server answered AddChordset with a \(recorded.event.kindName) event")
        }
        return chordset
    }

    /// `RenameChordset`.
    @discardableResult
    public func renameChordset(_ id: UUID, to title: String, options: WriteOptions = WriteOptions()) async throws(ClientError) -> RecordedEvent {
        try await execute(.renameChordset(id: id, title: title), options: options)
    }

    /// `DeleteChordset`: the chordset and its eight chords.
    @discardableResult
    public func deleteChordset(_ id: UUID, options: WriteOptions = WriteOptions()) async throws(ClientError) -> RecordedEvent {
        try await execute(.deleteChordset(id: id), options: options)
    }

    /// `SetChordColor`: a chord's background colour.
    @discardableResult
    public func setChordColor(_ chordID: UUID, to color: ChordColor, options: WriteOptions = WriteOptions()) async throws(ClientError) -> RecordedEvent {
        try await execute(.setChordColor(chordID: chordID, color: color), options: options)
    }

    /// `SetChordBpm`: a chord's tempo.
    @discardableResult
    public func setChordBPM(_ chordID: UUID, to bpm: Double, options: WriteOptions = WriteOptions()) async throws(ClientError) -> RecordedEvent {
        try await execute(.setChordBPM(chordID: chordID, bpm: bpm), options: options)
    }

    /// `SetControlsChord`: the store's one chord outside any chordset.
    @discardableResult
    public func setControlsChord(bpm: Double, color: ChordColor, id: UUID? = nil, options: WriteOptions = WriteOptions()) async throws(ClientError) -> RecordedEvent {
        try await execute(.setControlsChord(SetControlsChord(id: id, bpm: bpm, color: color)), options: options)
    }

    /// `MoveChordset`: to `index` of the user's order.
    @discardableResult
    public func moveChordset(_ id: UUID, to index: Int, options: WriteOptions = WriteOptions()) async throws(ClientError) -> RecordedEvent {
        try await execute(.moveChordset(id: id, toIndex: index), options: options)
    }

    /// `DeleteAll`: every chordset of the store (undo puts them back).
    @discardableResult
    public func deleteAll(options: WriteOptions = WriteOptions()) async throws(ClientError) -> RecordedEvent {
        try await execute(.deleteAll, options: options)
    }

    /// `Undo`: reverts the session's last change (``WriteOptions/session``); `NOTHING_TO_UNDO`
    /// when it has none.
    @discardableResult
    public func undo(options: WriteOptions = WriteOptions()) async throws(ClientError) -> RecordedEvent {
        try await execute(.undo, options: options)
    }

    /// `Redo`: re-applies what the session's last undo reverted.
    @discardableResult
    public func redo(options: WriteOptions = WriteOptions()) async throws(ClientError) -> RecordedEvent {
        try await execute(.redo, options: options)
    }

    /// `body`'s value; a reply the domain cannot read is the server's `INTERNAL`.
    static func decoded<T>(_ body: () throws -> T) throws(ClientError) -> T {
        do {
            return try body()
        } catch let error as ChordStoreError {
            throw ClientError(.internal, "the server's reply does not read: \(error.message)")
        } catch {
            throw ClientError(.internal, "the server's reply does not read: \(error)")
        }
    }
}
