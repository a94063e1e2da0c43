import ChordStoreWire
import Synchronization

/// The credentials one connection showed last, and who they proved at which access
/// version: the same credentials are taken again without hashing until the tokens change
/// (a revocation holds from the next call on). Also when the connection last noted its
/// token's use (at most once a second). A plain value: the framed port keeps one per
/// connection, the other transports one per peer in ``CredentialCaches``.
package struct CredentialCache: Sendable {
    var token: String?
    var member: String?
    var version: UInt64 = 0
    var principal: Principal?
    var lastUseNoted: ContinuousClock.Instant?

    /// An empty cache.
    package init() {}

    /// The principal cached for these credentials at `version`, if any.
    func principal(token: String?, member: String?, version: UInt64) -> Principal? {
        guard let principal, self.token == token, self.member == member, self.version == version else { return nil }
        return principal
    }

    /// Whether a use noted at `now` should reach the authenticator (once a second).
    mutating func shouldNoteUse(at now: ContinuousClock.Instant) -> Bool {
        if let last = lastUseNoted, now - last < .seconds(1) { return false }
        lastUseNoted = now
        return true
    }
}

/// The credential caches of the transports that have no connection object of their own
/// to keep one in (gRPC, HTTP): one per peer (address and port, which is one connection
/// at a time), at most `limit` of them; past it the whole table is dropped (the next
/// calls hash their token once more).
final class CredentialCaches: Sendable {
    private let caches = Mutex<[CallPeer: CredentialCache]>([:])
    private let limit: Int

    init(limit: Int) { self.limit = max(1, limit) }

    /// The cache of `peer` (empty if none).
    func cache(of peer: CallPeer) -> CredentialCache { caches.withLock { $0[peer] } ?? CredentialCache() }

    /// Keeps `cache` for `peer`.
    func keep(_ cache: CredentialCache, for peer: CallPeer) {
        caches.withLock { caches in
            if caches[peer] == nil, caches.count >= limit { caches.removeAll(keepingCapacity: true) }
            caches[peer] = cache
        }
    }
}
