import ChordStoreWire
import Hummingbird
import NIOCore

/// A response body's writer that a stream's task may write through: the server-sent
/// events of one JSON stream. Used by one task at a time (the stream's, then the one
/// that writes the last event), never by two at once, hence `@unchecked Sendable`.
final class EventSink: @unchecked Sendable {
    private var writer: any ResponseBodyWriter

    init(_ writer: any ResponseBodyWriter) {
        self.writer = writer
    }

    /// Writes `events`; a failed write means the client went away (`CANCELLED`).
    func write(_ events: ByteBuffer) async throws(WireError) {
        do {
            try await writer.write(events)
        } catch {
            throw WireError(.cancelled, "the client went away")
        }
    }

    /// Writes the stream's last event and ends the body.
    func finish(with last: ByteBuffer) async throws {
        try await writer.write(last)
        try await writer.finish(nil)
    }
}
