import ChordStoreAPI
import ChordStoreDomain
public import ChordStoreProto
import ChordStoreWire
public import Foundation
import SwiftProtobuf

/// The change feed as an `AsyncSequence` that survives lost connections: it remembers
/// the last sequence number it delivered and, when the stream ends with `UNAVAILABLE`
/// (connection lost, server restarting) or `RESOURCE_EXHAUSTED` (this reader fell
/// behind), subscribes again from the next one. Events come in order, each once.
///
/// ```swift
/// for try await event in client.subscribe(from: 1) { print(event.sequence) }
/// ```
@_spi(Raw) public struct EventSubscription: AsyncSequence, Sendable {
    public typealias Element = Chordstore_V1_EventEnvelope

    let client: Client
    let request: Chordstore_V1_SubscribeRequest
    /// Resubscriptions in a row without an event in between before giving up.
    let maxRetries: Int

    public func makeAsyncIterator() -> Iterator {
        Iterator(client: client, request: request, maxRetries: maxRetries)
    }

    /// Pulls events from the current stream, resubscribing when it fails.
    public struct Iterator: AsyncIteratorProtocol {
        let client: Client
        var request: Chordstore_V1_SubscribeRequest
        let maxRetries: Int
        var inner: ServerStream<Element>.Iterator?
        var connection: Connection?
        var failures = 0
        /// The wait before resubscribing: 50 ms doubling to a second, from the first again
        /// once an event arrives.
        var backoff = Backoff(first: .milliseconds(50), limit: .seconds(1), jitter: 0)

        init(client: Client, request: Chordstore_V1_SubscribeRequest, maxRetries: Int) {
            self.client = client
            self.request = request
            self.maxRetries = maxRetries
        }

        public mutating func next() async throws -> Element? {
            while true {
                try Task.checkCancellation()
                do {
                    if inner == nil {
                        if request.fromNow {
                            // Pin "now" to a sequence, so a resubscription misses nothing.
                            let health = try await client.call(.health, Chordstore_V1_HealthRequest(), as: Chordstore_V1_HealthReply.self)
                            request.fromNow = false
                            request.fromSequence = health.lastSequence + 1
                        }
                        let (stream, used) = try await client.streamOnConnection(.subscribe, request, as: Element.self)
                        inner = stream.makeAsyncIterator()
                        connection = used
                    }
                    guard let event = try await inner?.next() else { return nil }
                    request.fromSequence = event.sequence + 1
                    failures = 0
                    backoff.reset()
                    return event
                } catch let error as ClientError where Self.resumable(error.code) && failures < maxRetries {
                    inner = nil
                    failures += 1
                    if error.code == .unavailable { client.drop(connection) }
                    connection = nil
                    try await Task.sleep(for: backoff.next())
                }
            }
        }

        static func resumable(_ code: StatusCode) -> Bool {
            code == .unavailable || code == .resourceExhausted || code == .deadlineExceeded
        }
    }
}

extension Client {
    /// The change feed from `sequence` (1: the whole log), or only new events when
    /// `fromNow`; optionally only one chordset's events, or only some kinds
    /// (`"chordset_renamed"`, …). Resubscribes by itself, at most `maxRetries` times in a
    /// row without receiving an event.
    @_spi(Raw) public func subscribe(
        from sequence: UInt64 = 1, fromNow: Bool = false, chordsetID: Data? = nil, kinds: [String] = [],
        maxRetries: Int = 20
    ) -> EventSubscription {
        EventSubscription(client: self, request: .with {
            $0.fromSequence = sequence
            $0.fromNow = fromNow
            if let chordsetID { $0.chordsetID = chordsetID }
            $0.kinds = kinds
        }, maxRetries: maxRetries)
    }
}
