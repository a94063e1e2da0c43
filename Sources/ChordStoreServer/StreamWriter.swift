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

    /// Writes a page of messages in one hop to the event loop and one flush, then waits,
    /// woken by the channel, while the client is behind (see
    /// ``ConnectionHandler/whenWritable(_:token:timeout:)``).
    func send(_ messages: [ReplyPayload]) async throws(WireError) {
        let callID = self.callID
        let token = self.token
        let handler = self.handler
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
