/// The methods of the `chordstore.v1.ChordStore` service, by their wire names.
public enum Method: String, Sendable, CaseIterable {
    case addChordset = "chordstore.v1.ChordStore/AddChordset"
    case renameChordset = "chordstore.v1.ChordStore/RenameChordset"
    case deleteChordset = "chordstore.v1.ChordStore/DeleteChordset"
    case setChordColor = "chordstore.v1.ChordStore/SetChordColor"
    case setChordBPM = "chordstore.v1.ChordStore/SetChordBpm"
    case setControlsChord = "chordstore.v1.ChordStore/SetControlsChord"
    case moveChordset = "chordstore.v1.ChordStore/MoveChordset"
    case deleteAll = "chordstore.v1.ChordStore/DeleteAll"
    case listChordsets = "chordstore.v1.ChordStore/ListChordsets"
    case getChordset = "chordstore.v1.ChordStore/GetChordset"
    case getChord = "chordstore.v1.ChordStore/GetChord"
    case getControlsChord = "chordstore.v1.ChordStore/GetControlsChord"
    case getProfile = "chordstore.v1.ChordStore/GetProfile"
    case readLog = "chordstore.v1.ChordStore/ReadLog"
    case health = "chordstore.v1.ChordStore/Health"
    case undo = "chordstore.v1.ChordStore/Undo"
    case redo = "chordstore.v1.ChordStore/Redo"
    case getSession = "chordstore.v1.ChordStore/GetSession"
    case getHistory = "chordstore.v1.ChordStore/GetHistory"
    case readAsOf = "chordstore.v1.ChordStore/ReadAsOf"
    case subscribe = "chordstore.v1.ChordStore/Subscribe"
    case queryChordsets = "chordstore.v1.ChordStore/QueryChordsets"
    case countChordsets = "chordstore.v1.ChordStore/CountChordsets"
    case watchQuery = "chordstore.v1.ChordStore/WatchQuery"
    case replicate = "chordstore.v1.ChordStore/Replicate"
    case ackReplication = "chordstore.v1.ChordStore/AckReplication"
    case getNodeStatus = "chordstore.v1.ChordStore/GetNodeStatus"
    case promote = "chordstore.v1.ChordStore/Promote"
    case fence = "chordstore.v1.ChordStore/Fence"

    /// Whether the server answers with a stream of messages.
    public var isServerStreaming: Bool {
        switch self {
        case .readLog, .subscribe, .watchQuery, .replicate: true
        default: false
        }
    }

    /// Whether the method reads one item (answered without leaving the event loop).
    public var isPointRead: Bool {
        switch self {
        case .getChordset, .getChord, .getControlsChord, .getProfile, .health: true
        default: false
        }
    }

    /// Whether the method changes the store (and takes a command id).
    public var isCommand: Bool {
        switch self {
        case .addChordset, .renameChordset, .deleteChordset, .setChordColor, .setChordBPM,
             .setControlsChord, .moveChordset, .deleteAll, .undo, .redo: true
        default: false
        }
    }

    /// The protocol version this build speaks.
    public static let protocolVersion: UInt32 = 1
}
