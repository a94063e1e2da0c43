import ChordStoreAPI
public import ChordStoreDomain
public import ChordStoreEngine
public import ChordStoreWire
import Foundation
public import Logging
import Synchronization

/// Tells who a call comes from (docs/SECURITY.md): checks the bearer token or the cluster
/// secret a call shows against the node's own admin token, the tokens of the log (cached,
/// reloaded when ``ChordStoreEngine/ChordStore/accessVersion`` moves, so a revocation
/// holds from the next call on) and the cluster secret; limits guessing per address.
public final class Authenticator: Sendable {
    /// How calls are authenticated.
    public enum Mode: Sendable {
        /// Every call may do everything (`--auth none`, loopback only).
        case none
        /// Bearer tokens: the node's admin token (its secret, from `DATA/admin.token`) and
        /// the log's; cluster members show `clusterSecret` (`nil`: no member is accepted).
        case tokens(localAdmin: String, clusterSecret: String?)
    }

    private let store: ChordStore
    private let logger: Logger
    /// The node's admin token (`nil` with ``Mode/none``).
    private let localAdmin: TokenGrant?
    private let localAdminCreated: Instant
    private let clusterSecretHash: [UInt8]?
    /// The log's live tokens and the access version they were read at.
    private let cache = Mutex<(version: UInt64, tokens: [String: TokenGrant])?>(nil)
    /// When each token last authenticated a call on this node.
    private let lastUsed = Mutex<[String: Instant]>([:])
    private let failures: Mutex<FailedAuthentications>

    /// Whether calls need credentials.
    public var isEnabled: Bool { localAdmin != nil }

    /// An authenticator for `store`'s tokens, in `mode`.
    public init(
        store: ChordStore, mode: Mode, logger: Logger, guessing: FailedAuthentications = FailedAuthentications(),
        localAdminCreated: Instant? = nil
    ) {
        self.failures = Mutex(guessing)
        self.store = store
        self.logger = logger
        self.localAdminCreated = localAdminCreated ?? .now
        switch mode {
        case .none:
            localAdmin = nil
            clusterSecretHash = nil
        case .tokens(let secret, let clusterSecret):
            localAdmin = TokenGrant(id: TokenGrant.localAdminID, role: .admin, secretHash: TokenSecret.hash(secret))
            clusterSecretHash = clusterSecret.map(TokenSecret.hash)
        }
    }

    /// What an unknown id's secret is compared with.
    private static let noHash = [UInt8](repeating: 0, count: 32)

    /// Failed authentications since the server started, over every address.
    public var failedAuthentications: UInt64 { failures.withLock { $0.total } }

    /// Who the call with `metadata` comes from: `.unrestricted` without authentication,
    /// `.anonymous` without a credential; an invalid credential is `UNAUTHENTICATED`.
    public func authenticate(_ metadata: [String: String]) -> Result<Principal, WireError> {
        guard let localAdmin else { return .success(.unrestricted) }
        if let secret = metadata["cluster-secret"] {
            guard let clusterSecretHash else {
                return .failure(WireError(
                    .unauthenticated, "this server accepts no cluster member: it was started without --cluster-secret-file", reason: .clusterSecretInvalid))
            }
            guard secret.utf8.count <= 1_024, TokenSecret.equal(TokenSecret.hash(secret), clusterSecretHash) else {
                return .failure(WireError(.unauthenticated, "the cluster secret is not this cluster's", reason: .clusterSecretInvalid))
            }
            return .success(.member)
        }
        guard let header = metadata["authorization"] else { return .success(.anonymous) }
        guard header.utf8.count > 7, header.prefix(7).lowercased() == "bearer " else {
            return .failure(WireError(.unauthenticated, "the authorization metadata must be 'Bearer <token>'", reason: .tokenInvalid))
        }
        let secret = String(header.dropFirst(7))
        let invalid = WireError(.unauthenticated, "the token is not valid: unknown, revoked, or mistyped", reason: .tokenInvalid)
        guard let id = TokenSecret.id(of: secret) else { return .failure(invalid) }
        let grant: TokenGrant?
        if id == localAdmin.id {
            grant = localAdmin
        } else {
            do {
                grant = try token(id)
            } catch {
                return .failure(WireError(.unavailable, "cannot read the tokens: \(error)"))
            }
        }
        // Hashed and compared whether or not the id is known: the time taken does not
        // tell which ids exist.
        let matches = TokenSecret.equal(TokenSecret.hash(secret), grant?.secretHash ?? Self.noHash)
        guard let grant, matches else { return .failure(invalid) }
        return .success(.token(grant))
    }

    /// The live token `id` of the log, from the cache (reloaded if the tokens may have
    /// changed since it was read).
    private func token(_ id: String) throws -> TokenGrant? {
        try cache.withLock { cache in
            let version = store.accessVersion
            if let cache, cache.version == version { return cache.tokens[id] }
            var tokens: [String: TokenGrant] = [:]
            for record in try store.tokens() { tokens[record.grant.id] = record.grant }
            cache = (version, tokens)
            return tokens[id]
        }
    }

    /// The access version now: a connection re-checks a token it authenticated before
    /// only when it moved.
    var version: UInt64 { store.accessVersion }

    /// Whether the token of `grant` still works (a stream checks it as it goes on).
    func isLive(_ grant: TokenGrant) -> Bool {
        if grant.id == localAdmin?.id { return true }
        return (try? token(grant.id)) == grant
    }

    /// Notes that token `id` authenticated a call now.
    func noteUse(_ id: String) {
        let now = Instant.now
        lastUsed.withLock { $0[id] = now }
    }

    /// When token `id` last authenticated a call on this node since it started.
    public func lastUse(of id: String) -> Instant? { lastUsed.withLock { $0[id] } }

    /// The node's own admin token, as ListTokens shows it.
    var localAdminRecord: TokenRecord? {
        localAdmin.map { TokenRecord(grant: $0, created: localAdminCreated, createdAt: 0, createdBy: "") }
    }

    /// Notes a failed authentication from `peer` (an address, or an IPv6 /64; logged
    /// without the secret) and says what to do with the call.
    func failed(from peer: String, method: Method, error: WireError) -> FailedAuthentications.Penalty {
        let (penalty, count) = failures.withLock { $0.failed(from: peer, at: .now) }
        if count <= 3 || count % 10 == 0 {
            logger.notice("authentication failed", metadata: [
                "peer": "\(peer)", "method": "\(method.rawValue)", "reason": "\(error.message)", "failures": "\(count)",
            ])
        }
        return penalty
    }
}
