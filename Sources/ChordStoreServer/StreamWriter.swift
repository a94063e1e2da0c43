import ChordStoreDomain
import ChordStoreWire
import NIOCore

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
    /// channel has room and the page it posted before that way was written, it does not
    /// wait for the loop: a round trip through it cost the stream's task a wake-up per page
    /// (one per batch and follower of a Replicate stream, docs/PERFORMANCE.md). Otherwise
    /// it waits until the loop has written the page, then, woken by the channel, while the
    /// client is behind (see ``ConnectionHandler/whenWritable(_:token:timeout:)``). So a
    /// stream has at most two pages in the loop's queue: one posted, one awaited. Every end
    /// of a call cancels its task: a cancelled task's send throws `CANCELLED` ("the call
    /// ended"), which is how every producer learns to stop; a page posted just before the
    /// end is dropped by the loop.
    func send(_ messages: [ReplyPayload]) async throws(WireError) {
        if Task.isCancelled { throw WireError(.cancelled, "the call ended") }
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
