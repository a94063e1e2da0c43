import ChordStoreAPI
public import ChordStoreDomain
import ChordStoreProto
import SwiftProtobuf

/// A live query (`WatchQuery`) as domain values: the query's result first, then, after
/// each change of the store that changes it, an update with the deltas and the whole new
/// result (at most 1,000 chordsets: the window). Not resumed: when it ends with an error,
/// watch again (its first update replaces the list).
///
/// ```swift
/// for try await update in client.watch(ChordsetQuery(order: .index)) { show(update.chordsets) }
/// ```
public struct LiveQuery: AsyncSequence, Sendable {
    public typealias Element = QueryUpdate

    let client: Client
    let query: ChordsetQuery

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(client: client, request: query.proto)
    }

    /// Delivers the query's updates.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let client: Client
        let request: Chordstore_V1_QueryRequest
        var inner: ServerStream<Chordstore_V1_QueryUpdate>.Iterator?
        var current: [Chordset] = []

        /// The next update, `nil` when the stream ends; throws a ``ClientError``.
        public mutating func next() async throws -> QueryUpdate? {
            if inner == nil { inner = try await client.stream(.watchQuery, request, as: Chordstore_V1_QueryUpdate.self).makeAsyncIterator() }
            guard let message = try await inner?.next() else { return nil }
            var list = current
            let update = try Client.decoded { () throws -> QueryUpdate in
                if message.isInitial {
                    list = try message.initial.map { try Chordset(proto: $0) }
                    return QueryUpdate(isInitial: true, chordsets: list, deltas: [], sequence: message.sequence)
                }
                let deltas = try message.deltas.map { try ListDelta(proto: $0) }
                guard ListDelta.apply(deltas, to: &list) else {
                    throw ChordStoreError(.dataLoss, "a live query's deltas do not fit its list: watch again")
                }
                return QueryUpdate(isInitial: false, chordsets: list, deltas: deltas, sequence: message.sequence)
            }
            current = list
            return update
        }
    }
}

extension Client {
    /// A live query of the client's store (its cursor is ignored; its limit caps the
    /// window, at most 1,000).
    public func watch(_ query: ChordsetQuery) -> LiveQuery {
        var query = query
        query.cursor = nil
        return LiveQuery(client: self, query: query)
    }
}
