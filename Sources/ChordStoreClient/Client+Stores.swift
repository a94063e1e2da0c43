import ChordStoreAPI
public import ChordStoreDomain
import ChordStoreProto
import SwiftProtobuf

/// The server's stores, and moving events between them, in the domain's terms (an admin
/// token: docs/SECURITY.md).
extension Client {
    /// `CreateStore`.
    public func createStore(_ name: String) async throws(ClientError) -> StoreInfo {
        StoreInfo(proto: try await call(.createStore, Chordstore_V1_CreateStoreRequest.with { $0.name = name }, as: Chordstore_V1_StoreInfo.self))
    }

    /// `DeleteStore`: its views go, its events stay in the log; returns the deletion's
    /// place in the log.
    @discardableResult
    public func deleteStore(_ name: String) async throws(ClientError) -> UInt64 {
        try await call(.deleteStore, Chordstore_V1_DeleteStoreRequest.with { $0.name = name }, as: Chordstore_V1_DeleteStoreReply.self).logSequence
    }

    /// `ListStores`: up to `limit` stores after the one named `after` (`default` first,
    /// then by name), and the name to continue after (`nil`: no more).
    public func stores(after: String? = nil, limit: Int = 100) async throws(ClientError) -> (stores: [StoreInfo], next: String?) {
        let list = try await call(.listStores, Chordstore_V1_ListStoresRequest.with {
            $0.pageSize = UInt32(clamping: limit)
            $0.pageToken = after ?? ""
        }, as: Chordstore_V1_StoreList.self)
        return (list.stores.map(StoreInfo.init(proto:)), list.nextPageToken.isEmpty ? nil : list.nextPageToken)
    }

    /// `GetStoreInfo` (`nil`: the client's store).
    public func storeInfo(_ name: String? = nil, timeout: Duration? = nil) async throws(ClientError) -> StoreInfo {
        StoreInfo(proto: try await call(
            .getStoreInfo, Chordstore_V1_GetStoreInfoRequest.with { $0.name = name ?? "" }, timeout: timeout, as: Chordstore_V1_StoreInfo.self))
    }

    /// `ImportEvents`: appends exported events (at most 1,000 a call) to the client's
    /// store; returns its last event's sequence.
    @discardableResult
    public func importEvents(_ events: [RecordedEvent]) async throws(ClientError) -> UInt64 {
        try await call(.importEvents, Chordstore_V1_ImportEventsRequest.with { $0.events = events.map(\.envelope) },
                       timeout: .seconds(60), as: Chordstore_V1_ImportEventsReply.self).lastSequence
    }
}
