import ChordStoreAPI
public import ChordStoreDomain

/// A live token as the views keep it: its grant (never its secret, only the secret's
/// SHA-256), when and by whom it was created. The tokens are a projection of the log like
/// the registry of stores: ``ChordStoreDomain/TokenEvent`` adds and removes them, and a
/// store's deletion removes the tokens scoped to it.
public struct TokenRecord: Sendable, Hashable {
    /// What the token is and may do.
    public var grant: TokenGrant
    /// Its creation event's commit time.
    public var created: Instant
    /// Its creation event's place in the whole log.
    public var createdAt: UInt64
    /// The id of the token whose call created it (empty: none).
    public var createdBy: String

    /// Creates a record.
    public init(grant: TokenGrant, created: Instant, createdAt: UInt64, createdBy: String) {
        self.grant = grant
        self.created = created
        self.createdAt = createdAt
        self.createdBy = createdBy
    }

    /// The views' value bytes: created (8), createdAt (8), store id (4, all big-endian),
    /// role (1), secret hash (32), store name length (1) and name, then createdBy.
    var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(54 + grant.storeName.utf8.count + createdBy.utf8.count)
        withUnsafeBytes(of: UInt64(bitPattern: created.microsecondsSince1970).bigEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: createdAt.bigEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: grant.storeID.bigEndian) { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(grant.role.protoNumber))
        bytes.append(contentsOf: grant.secretHash)
        bytes.append(UInt8(grant.storeName.utf8.count))
        bytes.append(contentsOf: grant.storeName.utf8)
        bytes.append(contentsOf: createdBy.utf8)
        return bytes
    }

    /// Reads the views' entry of token `id`.
    init(id: String, bytes: UnsafeRawBufferPointer) throws(ChordStoreError) {
        guard bytes.count >= 54, bytes.count >= 54 + Int(bytes[53]) else {
            throw ChordStoreError(.dataLoss, "the entry of token \(id) is \(bytes.count) bytes, too short")
        }
        guard let role = TokenRole(protoNumber: UInt64(bytes[20])) else {
            throw ChordStoreError(.dataLoss, "token \(id) has role \(bytes[20]), which no version defines")
        }
        let nameEnd = 54 + Int(bytes[53])
        grant = TokenGrant(
            id: id, role: role, storeID: UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: 16, as: UInt32.self)),
            storeName: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[54..<nameEnd]), as: UTF8.self),
            secretHash: Array(bytes[21..<53]))
        created = Instant(microsecondsSince1970: Int64(bitPattern: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))))
        createdAt = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        createdBy = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[nameEnd...]), as: UTF8.self)
    }
}

/// A token command: creates or revokes a token (see docs/SECURITY.md). The server makes
/// the id and the secret; the writer checks them against the views.
enum TokenCommand: Sendable, Hashable {
    /// A new token; a scoped role names its store (`grant.storeName`), whose id the
    /// writer fills in.
    case create(TokenGrant)
    case revoke(id: String)
}
