public import ChordStoreDomain
public import ChordStoreProto
import Foundation
public import SwiftProtobuf

/// The one mapping between domain ``ChordStoreDomain/Command``s and their request
/// messages (`AddChordsetRequest`, …): the server parses requests with it, the CLI and
/// device replicas build requests with it.
public enum CommandMessages {
    /// The request message of `command`, carrying `context`.
    public static func request(for command: Command, context: Chordstore_V1_CommandContext) -> any SwiftProtobuf.Message {
        switch command {
        case .addChordset(let add):
            return Chordstore_V1_AddChordsetRequest.with {
                $0.context = context
                if let id = add.id { $0.id = id.protoBytes }
                $0.title = add.title
                if let date = add.creationDate { $0.creationMicros = date.microsecondsSince1970 }
                $0.chords = add.chords.map { spec in
                    Chordstore_V1_ChordSpec.with {
                        if let id = spec.id { $0.id = id.protoBytes }
                        $0.position = UInt32(clamping: spec.position)
                        if let bpm = spec.bpm { $0.bpm = bpm }
                        if let color = spec.color { $0.color = color.proto }
                    }
                }
            }
        case .renameChordset(let id, let title):
            return Chordstore_V1_RenameChordsetRequest.with {
                $0.context = context
                $0.chordsetID = id.protoBytes
                $0.title = title
            }
        case .deleteChordset(let id):
            return Chordstore_V1_DeleteChordsetRequest.with {
                $0.context = context
                $0.chordsetID = id.protoBytes
            }
        case .setChordColor(let chordID, let color):
            return Chordstore_V1_SetChordColorRequest.with {
                $0.context = context
                $0.chordID = chordID.protoBytes
                $0.color = color.proto
            }
        case .setChordBPM(let chordID, let bpm):
            return Chordstore_V1_SetChordBpmRequest.with {
                $0.context = context
                $0.chordID = chordID.protoBytes
                $0.bpm = bpm
            }
        case .setControlsChord(let set):
            return Chordstore_V1_SetControlsChordRequest.with {
                $0.context = context
                if let id = set.id { $0.id = id.protoBytes }
                $0.bpm = set.bpm
                $0.color = set.color.proto
            }
        case .moveChordset(let id, let index):
            return Chordstore_V1_MoveChordsetRequest.with {
                $0.context = context
                $0.chordsetID = id.protoBytes
                $0.toIndex = UInt32(clamping: index)
            }
        case .deleteAll:
            return Chordstore_V1_DeleteAllRequest.with { $0.context = context }
        case .undo:
            return Chordstore_V1_UndoRequest.with { $0.context = context }
        case .redo:
            return Chordstore_V1_RedoRequest.with { $0.context = context }
        }
    }

    /// The command a request message asks for; `INVALID_ARGUMENT` for an id that is not 16
    /// bytes, a missing colour, or a message that is no command request.
    public static func command(from request: any SwiftProtobuf.Message) throws(ChordStoreError) -> Command {
        switch request {
        case let request as Chordstore_V1_AddChordsetRequest:
            var specs: [ChordSpec] = []
            for spec in request.chords {
                specs.append(ChordSpec(
                    id: spec.id.isEmpty ? nil : try id(spec.id, "chords.id"), position: Int(spec.position),
                    bpm: spec.bpm == 0 ? nil : spec.bpm, color: spec.hasColor ? ChordColor(proto: spec.color) : nil))
            }
            return .addChordset(AddChordset(
                id: request.id.isEmpty ? nil : try id(request.id, "id"), title: request.title,
                creationDate: request.creationMicros == 0 ? nil : Instant(microsecondsSince1970: request.creationMicros),
                chords: specs))
        case let request as Chordstore_V1_RenameChordsetRequest:
            return .renameChordset(id: try id(request.chordsetID, "chordset_id"), title: request.title)
        case let request as Chordstore_V1_DeleteChordsetRequest:
            return .deleteChordset(id: try id(request.chordsetID, "chordset_id"))
        case let request as Chordstore_V1_SetChordColorRequest:
            guard request.hasColor else { throw ChordStoreError(.invalidArgument, "color is required") }
            return .setChordColor(chordID: try id(request.chordID, "chord_id"), color: ChordColor(proto: request.color))
        case let request as Chordstore_V1_SetChordBpmRequest:
            return .setChordBPM(chordID: try id(request.chordID, "chord_id"), bpm: request.bpm)
        case let request as Chordstore_V1_SetControlsChordRequest:
            guard request.hasColor else { throw ChordStoreError(.invalidArgument, "color is required") }
            return .setControlsChord(SetControlsChord(
                id: request.id.isEmpty ? nil : try id(request.id, "id"), bpm: request.bpm, color: ChordColor(proto: request.color)))
        case let request as Chordstore_V1_MoveChordsetRequest:
            return .moveChordset(id: try id(request.chordsetID, "chordset_id"), toIndex: Int(request.toIndex))
        case is Chordstore_V1_DeleteAllRequest:
            return .deleteAll
        case is Chordstore_V1_UndoRequest:
            return .undo
        case is Chordstore_V1_RedoRequest:
            return .redo
        default:
            throw ChordStoreError(.invalidArgument, "a \(type(of: request).protoMessageName) is not a command request")
        }
    }

    private static func id(_ bytes: Data, _ field: String) throws(ChordStoreError) -> UUID {
        guard bytes.count == 16 else { throw ChordStoreError(.invalidArgument, "\(field) is \(bytes.count) bytes; ids are 16") }
        return try UUID(protoBytes: bytes)
    }
}

/// The command request messages, which carry a ``Chordstore_V1_CommandContext``.
public protocol CommandRequest: SwiftProtobuf.Message {
    /// The session and command id of the command.
    var commandContext: Chordstore_V1_CommandContext { get set }
}

extension Chordstore_V1_AddChordsetRequest: CommandRequest {
    public var commandContext: Chordstore_V1_CommandContext { get { context } set { context = newValue } }
}
extension Chordstore_V1_RenameChordsetRequest: CommandRequest {
    public var commandContext: Chordstore_V1_CommandContext { get { context } set { context = newValue } }
}
extension Chordstore_V1_DeleteChordsetRequest: CommandRequest {
    public var commandContext: Chordstore_V1_CommandContext { get { context } set { context = newValue } }
}
extension Chordstore_V1_SetChordColorRequest: CommandRequest {
    public var commandContext: Chordstore_V1_CommandContext { get { context } set { context = newValue } }
}
extension Chordstore_V1_SetChordBpmRequest: CommandRequest {
    public var commandContext: Chordstore_V1_CommandContext { get { context } set { context = newValue } }
}
extension Chordstore_V1_SetControlsChordRequest: CommandRequest {
    public var commandContext: Chordstore_V1_CommandContext { get { context } set { context = newValue } }
}
extension Chordstore_V1_MoveChordsetRequest: CommandRequest {
    public var commandContext: Chordstore_V1_CommandContext { get { context } set { context = newValue } }
}
extension Chordstore_V1_DeleteAllRequest: CommandRequest {
    public var commandContext: Chordstore_V1_CommandContext { get { context } set { context = newValue } }
}
extension Chordstore_V1_UndoRequest: CommandRequest {
    public var commandContext: Chordstore_V1_CommandContext { get { context } set { context = newValue } }
}
extension Chordstore_V1_RedoRequest: CommandRequest {
    public var commandContext: Chordstore_V1_CommandContext { get { context } set { context = newValue } }
}
