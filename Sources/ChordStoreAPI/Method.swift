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
    case getLogPosition = "chordstore.v1.ChordStore/GetLogPosition"
    case getClusterStatus = "chordstore.v1.ChordStore/GetClusterStatus"
    case addMember = "chordstore.v1.ChordStore/AddMember"
    case removeMember = "chordstore.v1.ChordStore/RemoveMember"
    case createStore = "chordstore.v1.ChordStore/CreateStore"
    case deleteStore = "chordstore.v1.ChordStore/DeleteStore"
    case listStores = "chordstore.v1.ChordStore/ListStores"
    case getStoreInfo = "chordstore.v1.ChordStore/GetStoreInfo"
    case createToken = "chordstore.v1.ChordStore/CreateToken"
    case revokeToken = "chordstore.v1.ChordStore/RevokeToken"
    case listTokens = "chordstore.v1.ChordStore/ListTokens"
    case backup = "chordstore.v1.ChordStore/Backup"
    case importEvents = "chordstore.v1.ChordStore/ImportEvents"

    /// Whether the method changes data: a store's chordsets (a ``MethodKind/command``,
    /// which a client may retry under its command id) or the server (never retried).
    public var isCommand: Bool { spec.kind == .command || spec.kind == .serverChange }

    /// The protocol version this build speaks.
    public static let protocolVersion: UInt32 = 1
}
