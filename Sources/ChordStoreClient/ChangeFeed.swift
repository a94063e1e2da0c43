import ChordStoreAPI
public import ChordStoreDomain
import ChordStoreProto
import SwiftProtobuf
public import Foundation

/// The store's change feed (`Subscribe`) as domain events, in order, each once: it
/// resubscribes by itself from the event after the last it delivered when the stream
/// ends with `UNAVAILABLE` (connection lost, server restarting) or `RESOURCE_EXHAUSTED`
/// (this reader fell behind), at most its retries in a row without an event between.
///
/// ```swift
/// for try await event in client.events(from: 1) { print(event.sequence, event.event.kindName) }
/// ```
public struct ChangeFeed: AsyncSequence, Sendable {
    public typealias Element = RecordedEvent

    let subscription: EventSubscription

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(inner: subscription.makeAsyncIterator())
    }

    /// Delivers the feed's events.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var inner: EventSubscription.Iterator

        /// The next event, `nil` when the feed ends; throws a ``ClientError``.
        public mutating func next() async throws -> RecordedEvent? {
            guard let envelope = try await inner.next() else { return nil }
            return try Client.decoded { () throws in try RecordedEvent(envelope: envelope) }
        }
    }
}

extension Client {
    /// The change feed of the client's store from event `sequence` (1: from the start),
    /// optionally only one chordset's events (and those of the whole store, a delete-all
    /// say) and only events of `kinds` (``ChordStoreDomain/Event/kindNames``).
    public func events(from sequence: UInt64 = 1, chordset: UUID? = nil, kinds: Set<String> = [], maxRetries: Int = 20) -> ChangeFeed {
        ChangeFeed(subscription: subscribe(from: sequence, chordsetID: chordset?.protoBytes, kinds: kinds.sorted(), maxRetries: maxRetries))
    }

    /// The change feed from now on: the events committed after the call.
    public func eventsFromNow(chordset: UUID? = nil, kinds: Set<String> = [], maxRetries: Int = 20) -> ChangeFeed {
        ChangeFeed(subscription: subscribe(fromNow: true, chordsetID: chordset?.protoBytes, kinds: kinds.sorted(), maxRetries: maxRetries))
    }
}
