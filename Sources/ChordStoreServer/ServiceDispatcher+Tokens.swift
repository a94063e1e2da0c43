import ChordStoreAPI
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf

/// The token methods (docs/SECURITY.md): creating, revoking and listing bearer tokens.
/// Admin only. Creating and revoking are writes of the leader, replicated like any event.
extension ServiceDispatcher {
    func createToken(_ payload: RequestPayload, _ context: CallContext) async throws -> [UInt8] {
        let request = try parse(Chordstore_V1_CreateTokenRequest.self, payload, .createToken)
        guard let role = TokenRole(proto: request.role) else {
            throw WireError(.invalidArgument, "role is required: admin, read-write or read-only")
        }
        if role.isScoped, request.store.isEmpty {
            throw WireError(.invalidArgument, "a \(role.rawValue) token works on one store: give its name")
        }
        if !role.isScoped, !request.store.isEmpty {
            throw WireError(.invalidArgument, "an admin token works on every store: give no store")
        }
        try checkLeading()
        let id = TokenSecret.makeID()
        let secret = TokenSecret.make(id: id)
        let grant = TokenGrant(id: id, role: role, storeName: request.store, secretHash: TokenSecret.hash(secret))
        let record: TokenRecord
        do {
            record = try await store.createToken(grant, context: CommandContext(session: context.session, tokenID: context.principal.tokenID))
        } catch {
            throw Self.commandError(error, leader: replication)
        }
        try await awaitDurability(.default, of: record.createdAt)
        return try Chordstore_V1_CreatedToken.with {
            $0.token = tokenInfo(record)
            $0.secret = secret
        }.serializedBytes()
    }

    func revokeToken(_ payload: RequestPayload, _ context: CallContext) async throws -> [UInt8] {
        let request = try parse(Chordstore_V1_RevokeTokenRequest.self, payload, .revokeToken)
        if request.tokenID == TokenGrant.localAdminID {
            throw WireError(
                .failedPrecondition,
                "the local admin token is each node's own, in DATA/admin.token: delete that file and restart the node for a new one")
        }
        try TokenGrant.checkID(request.tokenID)
        try checkLeading()
        let recorded: RecordedEvent
        do {
            recorded = try await store.revokeToken(request.tokenID, context: CommandContext(session: context.session, tokenID: context.principal.tokenID))
        } catch {
            throw Self.commandError(error, leader: replication)
        }
        try await awaitDurability(.default, of: recorded.logSequence)
        return try Chordstore_V1_RevokeTokenReply.with { $0.logSequence = recorded.logSequence }.serializedBytes()
    }

    func listTokens(_ payload: RequestPayload) throws -> [UInt8] {
        let request = try parse(Chordstore_V1_ListTokensRequest.self, payload, .listTokens)
        let size = request.pageSize == 0 ? min(100, limits.maxListSize) : min(Int(request.pageSize), limits.maxListSize)
        if !request.pageToken.isEmpty { try TokenGrant.checkID(request.pageToken) }
        var all = try store.tokens()
        if let local = authenticator?.localAdminRecord { all.insert(local, at: 0) }
        // The local admin first, then by id; a page starts after the id of the last one.
        let start = request.pageToken.isEmpty ? 0
            : request.pageToken == TokenGrant.localAdminID ? (all.first?.grant.id == TokenGrant.localAdminID ? 1 : 0)
            : all.firstIndex { $0.grant.id != TokenGrant.localAdminID && $0.grant.id > request.pageToken } ?? all.count
        let page = all[start...].prefix(size)
        return try Chordstore_V1_TokenList.with {
            $0.tokens = page.map(tokenInfo)
            $0.nextPageToken = start + size < all.count ? page.last?.grant.id ?? "" : ""
        }.serializedBytes()
    }

    private func tokenInfo(_ record: TokenRecord) -> Chordstore_V1_TokenInfo {
        Chordstore_V1_TokenInfo.with {
            $0.tokenID = record.grant.id
            $0.role = record.grant.role.proto
            $0.store = record.grant.storeName
            $0.created = record.created.proto
            if let used = authenticator?.lastUse(of: record.grant.id) { $0.lastUsed = used.proto }
            $0.createdBy = record.createdBy
        }
    }
}
