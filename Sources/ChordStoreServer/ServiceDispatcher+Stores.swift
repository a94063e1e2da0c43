import ChordStoreAPI
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf

/// The store methods: creating, deleting, listing and describing the server's stores.
/// They work on the whole server; creating and deleting are writes (the leader's, as
/// durable as the server's default durability).
extension ServiceDispatcher {
    func createStore(_ payload: RequestPayload, _ context: CallContext) async throws -> [UInt8] {
        let request = try parse(Chordstore_V1_CreateStoreRequest.self, payload, .createStore)
        try checkLeading()
        let info: StoreInfo
        do {
            info = try await store.createStore(request.name, context: CommandContext(session: context.session, tokenID: context.principal.tokenID))
        } catch {
            throw Self.commandError(error, leader: replication)
        }
        try await awaitDurability(.default, of: info.logSequence)
        return try info.proto.serializedBytes()
    }

    func deleteStore(_ payload: RequestPayload, _ context: CallContext) async throws -> [UInt8] {
        let request = try parse(Chordstore_V1_DeleteStoreRequest.self, payload, .deleteStore)
        try checkLeading()
        let recorded: RecordedEvent
        do {
            recorded = try await store.deleteStore(request.name, context: CommandContext(session: context.session, tokenID: context.principal.tokenID))
        } catch {
            throw Self.commandError(error, leader: replication)
        }
        try await awaitDurability(.default, of: recorded.logSequence)
        return try Chordstore_V1_DeleteStoreReply.with { $0.logSequence = recorded.logSequence }.serializedBytes()
    }

    func listStores(_ payload: RequestPayload) throws -> [UInt8] {
        let request = try parse(Chordstore_V1_ListStoresRequest.self, payload, .listStores)
        let size = request.pageSize == 0 ? min(100, limits.maxListSize) : min(Int(request.pageSize), limits.maxListSize)
        if !request.pageToken.isEmpty { try StoreName.check(request.pageToken) }
        let stores = try store.stores(after: request.pageToken.isEmpty ? nil : request.pageToken, limit: size + 1)
        return try Chordstore_V1_StoreList.with {
            $0.stores = stores.prefix(size).map(\.proto)
            $0.nextPageToken = stores.count > size ? stores[size - 1].name : ""
        }.serializedBytes()
    }

    func getStoreInfo(_ payload: RequestPayload, _ context: CallContext) throws -> [UInt8] {
        let request = try parse(Chordstore_V1_GetStoreInfoRequest.self, payload, .getStoreInfo)
        // The call's store was checked at admission; a store the request names is checked here.
        if !request.name.isEmpty, let refusal = context.principal.check(.read, store: request.name) { throw refusal }
        var info = try store.storeInfo(request.name.isEmpty ? context.store : request.name).proto
        // The whole log's position tells of every store's writes: an admin's only.
        if context.principal.check(.admin, store: "") != nil { info.logSequence = 0 }
        return try info.serializedBytes()
    }
}
