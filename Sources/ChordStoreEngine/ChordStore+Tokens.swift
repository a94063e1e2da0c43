public import ChordStoreDomain

/// The server's bearer tokens (docs/SECURITY.md), kept in the log like the stores: a
/// token created on the leader works on every member. The log and the views hold only
/// the SHA-256 of each secret; the caller makes the id and the secret.
extension ChordStore {
    /// Records `grant` once its creation is durable and returns it as the views keep it.
    /// `invalidArgument` for a malformed id or hash, or an admin token with a store;
    /// `notFound` for a scoped token's store that does not exist; `alreadyExists` for an id
    /// in use; `resourceExhausted` past ``Options/maxTokens``.
    @discardableResult
    public func createToken(_ grant: TokenGrant, context: CommandContext = CommandContext()) async throws(ChordStoreError) -> TokenRecord {
        let recorded = try await writer.submit(SubmittedCommand(token: .create(grant), context: context)).get().recorded
        guard case .token(.created(let created)) = recorded.event else {
            throw ChordStoreError(.internal, "creating token \(grant.id) recorded a \(recorded.event.kindName)")
        }
        return TokenRecord(grant: created, created: recorded.timestamp, createdAt: recorded.logSequence, createdBy: recorded.tokenID)
    }

    /// Revokes the token `id`: calls showing it fail from the next one on. `notFound` if
    /// no such token is live. Returns the revocation's event.
    @discardableResult
    public func revokeToken(_ id: String, context: CommandContext = CommandContext()) async throws(ChordStoreError) -> RecordedEvent {
        try await writer.submit(SubmittedCommand(token: .revoke(id: id), context: context)).get().recorded
    }

    /// Every live token, by id.
    public func tokens() throws(ChordStoreError) -> [TokenRecord] {
        try backend.withStores { try $0.tokens() }
    }

    /// Grows whenever the stores or tokens may have changed: a cache of ``tokens()``
    /// reloads when it differs from the value it was loaded at (read before loading).
    public var accessVersion: UInt64 { notifier.serverVersion }

    /// Returns once ``accessVersion`` has moved past `version` (a token or store was
    /// created, revoked or deleted, here or by replication), the store closed, or the task
    /// was cancelled: a wake-up for whoever must act on a revocation at once.
    public func waitForAccessChange(after version: UInt64) async {
        await notifier.waitForServerChange(after: version)
    }
}
