import ChordStoreDomain
import ChordStoreWire
import NIOCore
import Synchronization

extension StreamWriter {
    /// How a stream whose client does not read ends; counted once, when it ends a call.
    static func slowReader(_ timeout: Duration) -> WireError {
        WireError(.resourceExhausted, "the client did not read its stream for \(timeout)", reason: .slowReader)
    }
}

/// Writes the messages of one server stream, waiting while the client does not read:
/// the channel's write buffer is bounded (its high-water mark), and a reader that stays
/// behind longer than the limit ends the stream with `RESOURCE_EXHAUSTED`.
struct StreamWriter: Sendable {
    let channel: any Channel
    let callID: UInt64
    let token: UInt64
    let limits: WireLimits
    let handler: NIOLoopBound<ConnectionHandler>
    /// Whether a page posted without waiting has not been written yet.
    let posted = PostedPage()

    /// Writes a page of messages in one hop to the event loop and one flush. While the
    /// channel has room and the page posted before was written, it does not wait for the
    /// loop: a round trip through it cost the stream's task a wake-up per page (a quarter of
    /// a Replicate stream's, one per batch and follower, docs/PERFORMANCE.md). Otherwise it
    /// waits, woken by the channel, while the client is behind (see
    /// ``ConnectionHandler/whenWritable(_:token:timeout:)``); so at most one page waits in
    /// the loop's queue unwritten. A page of a call that ended is dropped (the call's task
    /// is cancelled as it ends); its wait, if it waits, fails at once.
    func send(_ messages: [ReplyPayload]) async throws(WireError) {
        let callID = self.callID
        let token = self.token
        let handler = self.handler
        let posted = self.posted
        if channel.isWritable, posted.take() {
            channel.eventLoop.execute {
                if handler.value.isActive(callID, token: token) { handler.value.stream(callID, messages: messages) }
                posted.written()
            }
            return
        }
        let timeout = limits.slowReaderTimeout
        do {
            try await channel.eventLoop.flatSubmit {
                // A call that ended sends nothing, and its wait fails at once.
                if handler.value.isActive(callID, token: token) { handler.value.stream(callID, messages: messages) }
                return handler.value.whenWritable(callID, token: token, timeout: timeout)
            }.get()
        } catch let error as WireError {
            throw error
        } catch {
            throw WireError(.unavailable, "the connection closed")
        }
    }
}

/// The one page a ``StreamWriter`` may have posted to its event loop without waiting.
final class PostedPage: Sendable {
    private let pending = Atomic(false)

    /// Claims the place of the page posted without waiting: false while one is unwritten.
    func take() -> Bool {
        pending.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }

    /// The posted page was written (or dropped): the place is free.
    func written() {
        pending.store(false, ordering: .releasing)
    }
}
