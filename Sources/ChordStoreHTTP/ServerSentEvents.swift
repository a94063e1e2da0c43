import ChordStoreDomain
import ChordStoreServer
import ChordStoreWire
import Hummingbird
import NIOCore
import Synchronization

/// A stream's response body as server-sent events (docs/PROTOCOL.md §10). The body's own
/// task owns the writer and writes what the stream's task hands it, one buffer at a
/// time (the stream waits until its buffer was written: a slow client holds it back);
/// while the stream is idle, a comment every `keepAlive` keeps proxies from closing the
/// connection and finds a client that went away (the server stops reading a connection
/// while it answers it, so only a failed write shows that the client closed it). A write
/// that waits longer than `slowReader` for a client that does not read closes the
/// connection, as the framed port cuts a slow reader.
enum ServerSentEvents {
    /// What the stream produces: it emits events and returns how it ended (`nil`: OK).
    typealias Producer = @Sendable (_ emit: @escaping @Sendable (ByteBuffer) async throws(WireError) -> Void) async -> WireError?

    /// How long a stream's last event may take to reach the client before the
    /// connection is closed (a client that stopped reading).
    static let finishTimeout: Duration = .seconds(5)

    /// A body that runs `produce` and writes its events, then its end: `event: end` or
    /// `event: error` with the status's JSON. `closed` fires when the client goes away
    /// (a failed write); `channel` is closed when the last event cannot be written.
    static func body(
        keepAlive: Duration, slowReader: Duration, closed: OneShotSignal, channel: any Channel, slot: StreamSlot,
        status: @escaping @Sendable (WireError?) -> String, produce: @escaping Producer
    ) -> ResponseBody {
        ResponseBody(contentLength: nil) { (writer: inout any ResponseBodyWriter) async throws in
            defer { slot.release() }
            let (outgoing, queue) = AsyncStream<Outgoing>.makeStream()
            let keepAlivePending = Flag()
            let writing = WriteClock()
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    let end = await produce { buffer throws(WireError) in
                        let written = OneShotSignal()
                        queue.yield(Outgoing(buffer: buffer, written: written))
                        await written.wait()
                        if Task.isCancelled || closed.hasFired { throw WireError(.cancelled, "the client went away") }
                    }
                    queue.yield(Outgoing(buffer: ByteBuffer(string: "event: \(end == nil ? "end" : "error")\ndata: \(status(end))\n\n")))
                    queue.finish()
                    // The writer has this long to hand the last event over.
                    try? await Task.sleep(for: finishTimeout)
                    if !Task.isCancelled { channel.close(promise: nil) }
                }
                group.addTask {
                    // Once a second: a write stuck on a client that does not read closes its
                    // connection; an idle stream gets its keep-alive comment.
                    let tick = min(keepAlive, .seconds(1))
                    var idle: Duration = .zero
                    while true {
                        try? await Task.sleep(for: tick)
                        if Task.isCancelled { return }
                        if let waited = writing.waited(), waited > slowReader {
                            closed.fire()
                            channel.close(promise: nil)
                            return
                        }
                        idle += tick
                        if idle >= keepAlive {
                            idle = .zero
                            if keepAlivePending.set() { queue.yield(Outgoing(buffer: ByteBuffer(string: ": keep-alive\n\n"), isKeepAlive: true)) }
                        }
                    }
                }
                var wentAway = false
                for await next in outgoing {
                    do {
                        writing.start()
                        defer { writing.stop() }
                        try await writer.write(next.buffer)
                    } catch {
                        wentAway = true
                        closed.fire()
                        break
                    }
                    if next.isKeepAlive { keepAlivePending.clear() }
                    next.written?.fire()
                }
                if !wentAway { try? await writer.finish(nil) }
                group.cancelAll()
            }
        }
    }

    /// A buffer for the writer, and what to fire once it is written.
    private struct Outgoing: Sendable {
        var buffer: ByteBuffer
        var written: OneShotSignal? = nil
        var isKeepAlive = false
    }

    /// When the write in progress began, if one is.
    private final class WriteClock: Sendable {
        private let began = Mutex<ContinuousClock.Instant?>(nil)

        func start() { began.withLock { $0 = .now } }

        func stop() { began.withLock { $0 = nil } }

        /// How long the write in progress has waited (`nil`: none is).
        func waited() -> Duration? { began.withLock { $0.map { .now - $0 } } }
    }

    /// Whether a keep-alive comment waits to be written (at most one does).
    private final class Flag: Sendable {
        private let value = Atomic(false)

        /// Sets the flag; true if it was clear.
        func set() -> Bool { !value.exchange(true, ordering: .acquiringAndReleasing) }

        func clear() { value.store(false, ordering: .releasing) }
    }
}
