/// What a token may do (docs/SECURITY.md). An `admin` token works on every store and
/// manages stores and tokens; the other two work on the one store they are scoped to.
public enum TokenRole: String, Sendable, Hashable, CaseIterable {
    /// Every store; stores, tokens and cluster status.
    case admin
    /// Reads and changes of its one store.
    case readWrite = "read-write"
    /// Reads of its one store.
    case readOnly = "read-only"

    /// Whether the role is scoped to one store.
    public var isScoped: Bool { self != .admin }
}

/// A bearer token as the log records its creation: never its secret, only the secret's
/// SHA-256. Scoped roles name their store by id (a re-created store of the same name is
/// another store) and by name (for people).
public struct TokenGrant: Sendable, Hashable {
    /// The id of each node's own admin token (`DATA/admin.token`), which the log never holds.
    public static let localAdminID = "local-admin"

    /// The token's public id (it is also the start of the secret: docs/SECURITY.md).
    public var id: String
    /// What it may do.
    public var role: TokenRole
    /// The store a scoped token works on (0 with `storeName` empty for `admin`).
    public var storeID: UInt32
    /// That store's name (empty for `admin`).
    public var storeName: String
    /// SHA-256 of the whole secret (32 bytes).
    public var secretHash: [UInt8]

    /// Creates a grant.
    public init(id: String, role: TokenRole, storeID: UInt32 = 0, storeName: String = "", secretHash: [UInt8]) {
        self.id = id
        self.role = role
        self.storeID = storeID
        self.storeName = storeName
        self.secretHash = secretHash
    }

    /// The rule for token ids: 1–32 characters of a-z, 0-9 and '-'.
    public static func checkID(_ id: String) throws(ChordStoreError) {
        guard (1...32).contains(id.utf8.count),
              id.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }) else {
            throw ChordStoreError(.invalidArgument, "'\(id.prefix(40))' is not a token id: 1–32 characters of a-z, 0-9 and '-'")
        }
    }
}

/// A change of the server's tokens: an event of the whole server, in no store.
public enum TokenEvent: Sendable, Hashable {
    /// A token was created.
    case created(TokenGrant)
    /// A token was revoked: it stops working at the next call that shows it.
    case revoked(id: String)
}
