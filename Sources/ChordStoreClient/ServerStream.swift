import ChordStoreDomain
import ChordStoreProto
import ChordStoreWire
public import Foundation
public import SwiftProtobuf
import Synchronization

/// The messages of one server-streaming call, pulled as the caller iterates: the
/// connection buffers at most ``ReplyRouter/highWater`` undelivered replies per call and
/// stops reading the socket beyond that, so a slow consumer slows the server's stream
/// (which ends it with `RESOURCE_EXHAUSTED` if it stays behind) instead of growing this
/// process's memory. Ends with the call's status: normally when OK, throwing a
/// ``ClientError`` otherwise. A consumer that stops early cancels the call.
@_spi(Raw) public struct ServerStream<Message: SwiftProtobuf.Message>: AsyncSequence, Sendable {
    public typealias Element = Message

    let replies: AsyncThrowingStream<Chordstore_V1_Reply, any Error>
    let call: CallHandle

    public func makeAsyncIterator() -> Iterator {
        Iterator(replies: replies.makeAsyncIterator(), call: call)
    }

    /// Decodes replies as the caller asks for them.
    public struct Iterator: AsyncIteratorProtocol {
        var replies: AsyncThrowingStream<Chordstore_V1_Reply, any Error>.AsyncIterator
        let call: CallHandle
        var done = false

        public mutating func next() async throws -> Message? {
            guard let payload = try await nextPayload() else { return nil }
            do {
                return try Message(serializedBytes: payload)
            } catch {
                throw ClientError(.internal, "a message of the stream is not a \(Message.protoMessageName)")
            }
        }

        /// The next message's bytes, undecoded (for a reader with a faster decoder of its
        /// own, such as a replica reading the change feed's records).
        public mutating func nextPayload() async throws -> Data? {
            while !done {
                guard let reply = try await replies.next() else {
                    done = true
                    call.finished()
                    if Task.isCancelled { throw ClientError(.cancelled, "the call was cancelled") }
                    throw ClientError(.unavailable, "the connection closed during the stream", reason: .connectionLost)
                }
                call.consumed()
                if reply.hasStatus {
                    done = true
                    call.finished()
                    guard reply.status.code == 0 else { throw ClientError(reply.status) }
                }
                if !reply.payload.isEmpty { return reply.payload }
            }
            return nil
        }
    }
}

/// One streaming call's bookkeeping: tells the router when a reply was consumed, and
/// cancels the call on the server if the stream is dropped before its end.
final class CallHandle: Sendable {
    let callID: UInt64
    private let router: ReplyRouter
    private let cancel: @Sendable (UInt64) -> Void
    private let ended = Atomic(false)

    init(callID: UInt64, router: ReplyRouter, cancel: @escaping @Sendable (UInt64) -> Void) {
        self.callID = callID
        self.router = router
        self.cancel = cancel
    }

    func consumed() { router.consumed(callID) }

    func finished() {
        guard !ended.exchange(true, ordering: .relaxed) else { return }
        router.close(callID)
    }

    deinit {
        if !ended.load(ordering: .relaxed) {
            router.close(callID)
            cancel(callID)  // the consumer stopped early: the server stops streaming
        }
    }
}
