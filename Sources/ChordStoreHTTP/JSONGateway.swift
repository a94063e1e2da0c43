import ChordStoreServer
import ChordStoreWire
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SwiftProtobuf
import Synchronization

/// The registry's methods as JSON over HTTP (docs/PROTOCOL.md, "JSON over HTTP"), for
/// the web console and for `curl`: `POST /api/<service>/<method>` with the request
/// message in protobuf's JSON mapping, answered by the reply message in JSON, or, for a
/// stream, by server-sent events. The calls run through the same ``CallRunner`` as the
/// gRPC endpoint's: the same credentials, permissions, waits and handlers.
struct JSONGateway: Sendable {
    let runner: CallRunner
    let limits: HTTPEndpoint.CallLimits
    let shutdown: OneShotSignal
    let logger: Logger
    private let openStreams = StreamSlots()

    init(runner: CallRunner, limits: HTTPEndpoint.CallLimits, shutdown: OneShotSignal, logger: Logger) {
        self.runner = runner
        self.limits = limits
        self.shutdown = shutdown
        self.logger = logger
    }

    /// The request's header fields the calls read.
    enum Header {
        static let store = HTTPField.Name("ChordStore-Store")!
        static let session = HTTPField.Name("ChordStore-Session")!
        static let minSequence = HTTPField.Name("ChordStore-Min-Sequence")!
        static let timeout = HTTPField.Name("ChordStore-Timeout")!
    }

    /// Answers `POST /api/<service>/<method>`.
    func call(_ name: String, _ request: Request, _ context: EndpointRequestContext) async -> Response {
        let started = ContinuousClock.now
        guard let method = Method(rawValue: name), CallRunner.methods.contains(method), let messages = ServiceDispatcher.messages[method] else {
            return Self.failure(WireError(.unimplemented, "no method '\(name)' here: the methods are in proto/chordstore/v1/rpc.proto"))
        }
        let peer = context.remoteAddress?.ipAddress ?? ""
        let call: CallHeaders
        do {
            call = try CallHeaders(request.headers)
        } catch {
            return Self.failure(error)
        }
        let principal: Principal
        let payload: Data
        do {
            principal = try await runner.admit(method, metadata: call.fields, store: call.store, peer: peer)
            payload = try await Self.decode(request, as: messages.request, limits: limits)
        } catch {
            return Self.failure(error)
        }
        let session = call.fields["session"] ?? "http-\(peer):\(context.remoteAddress?.port ?? 0)"
        let callContext = CallContext(session: session, peerAddress: peer, store: call.store, principal: principal)
        let runner = self.runner
        guard CallRunner.isStream(method) else {
            do {
                let reply = try await CallBounds(timeout: call.timeout, started: started).run { () async throws(WireError) -> [UInt8] in
                    try await runner.unary(method, payload: payload, context: callContext, minSequence: call.minSequence)
                }
                return Self.json(.ok, try Self.json(reply, as: messages.reply))
            } catch {
                logIfServerFault(error, method)
                return Self.failure(error)
            }
        }
        guard openStreams.take(upTo: limits.maxStreams) else {
            return Self.failure(WireError(.resourceExhausted, "\(limits.maxStreams) streams are open on this endpoint: try again later"))
        }
        let bounds = CallBounds(timeout: call.timeout, shutdown: shutdown, started: started)
        let (openStreams, logger) = (self.openStreams, self.logger)
        let body = ResponseBody(contentLength: nil) { (writer: inout any ResponseBodyWriter) async throws in
            defer { openStreams.give() }
            // The stream's task writes through the box; it has ended (the task group
            // waited for it) before the last event and the finish are written here.
            let sink = EventSink(writer)
            let end: WireError?
            do throws(WireError) {
                try await bounds.run { () async throws(WireError) in
                    try await runner.stream(method, payload: payload, context: callContext) { page throws(WireError) in
                        var buffer = ByteBuffer()
                        for message in page { buffer.writeString("data: \(try Self.jsonText(message, as: messages.reply))\n\n") }
                        try await sink.write(buffer)
                    }
                }
                end = nil
            } catch {
                if error.code == .internal || error.code == .dataLoss {
                    logger.error("HTTP stream failed", metadata: ["method": "\(method.rawValue)", "error": "\(error)"])
                }
                end = error
            }
            let status = Self.statusText(end ?? WireError(.ok, ""))
            try await sink.finish(with: ByteBuffer(string: "event: \(end == nil ? "end" : "error")\ndata: \(status)\n\n"))
        }
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-store", .init("X-Accel-Buffering")!: "no"],
            body: body)
    }

    /// The request body (JSON; empty means `{}`) as the request message's bytes.
    private static func decode(
        _ request: Request, as type: any SwiftProtobuf.Message.Type, limits: HTTPEndpoint.CallLimits
    ) async throws(WireError) -> Data {
        let body: ByteBuffer
        do {
            body = try await CallBounds(timeout: limits.requestTimeout).run { () async throws(WireError) -> ByteBuffer in
                do {
                    return try await request.body.collect(upTo: limits.maxRequestBytes)
                } catch {
                    throw WireError(.resourceExhausted, "the request body is over \(limits.maxRequestBytes) bytes, or was cut off")
                }
            }
        } catch {
            throw error.code == .deadlineExceeded ? WireError(.deadlineExceeded, "the request body did not arrive within \(limits.requestTimeout)") : error
        }
        let bytes = body.readableBytes == 0 ? Array("{}".utf8) : Array(buffer: body)
        do {
            return try type.init(jsonUTF8Bytes: bytes, options: JSONDecodingOptions()).serializedData()
        } catch {
            throw WireError(.invalidArgument, "the body is not a JSON \(type.protoMessageName): \(error)")
        }
    }

    /// A reply message's bytes, in JSON.
    private static func json(_ reply: [UInt8], as type: any SwiftProtobuf.Message.Type) throws(WireError) -> ByteBuffer {
        ByteBuffer(string: try jsonText(reply, as: type) + "\n")
    }

    private static func jsonText(_ reply: [UInt8], as type: any SwiftProtobuf.Message.Type) throws(WireError) -> String {
        do {
            var options = JSONEncodingOptions()
            options.preserveProtoFieldNames = true
            return try type.init(serializedBytes: reply).jsonString(options: options)
        } catch {
            throw WireError(.internal, "cannot render the reply \(type.protoMessageName) as JSON: \(error)")
        }
    }

    /// An error's JSON: `{"code": "NOT_FOUND", "message": …}`, with the leader of a
    /// refused write and the current revision of an `ABORTED` when there are.
    private static func statusText(_ error: WireError) -> String {
        var fields: [String: any Sendable] = ["code": "\(error.code)", "message": error.message]
        if let leader = error.leader { fields["leader"] = leader }
        if let revision = error.currentRevision { fields["current_revision"] = String(revision) }
        let data = (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    static func failure(_ error: WireError) -> Response {
        json(HTTPResponse.Status(error.code), ByteBuffer(string: statusText(error) + "\n"))
    }

    private static func json(_ status: HTTPResponse.Status, _ body: ByteBuffer) -> Response {
        Response(status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"], body: ResponseBody(byteBuffer: body))
    }

    private func logIfServerFault(_ error: WireError, _ method: Method) {
        guard error.code == .internal || error.code == .dataLoss else { return }
        logger.error("HTTP call failed", metadata: ["method": "\(method.rawValue)", "error": "\(error)"])
    }
}

/// What a JSON call's headers say, in the framed protocol's terms: `Authorization:
/// Bearer …`, `ChordStore-Store`, `ChordStore-Session`, `ChordStore-Min-Sequence` and
/// `ChordStore-Timeout` (milliseconds).
struct CallHeaders {
    /// The metadata the authenticator and the handlers read (`authorization`, `session`).
    var fields: [String: String] = [:]
    /// The store the call works on (empty: `default`).
    var store = ""
    /// Read your writes: the store event the read waits for (0: none).
    var minSequence: UInt64 = 0
    /// The call's deadline, from when it arrived (`nil`: none).
    var timeout: Duration?

    /// Reads `headers`; a malformed number is `INVALID_ARGUMENT`.
    init(_ headers: HTTPFields) throws(WireError) {
        if let value = headers[.authorization] { fields["authorization"] = value }
        if let value = headers[JSONGateway.Header.session], !value.isEmpty { fields["session"] = value }
        store = headers[JSONGateway.Header.store] ?? ""
        if let text = headers[JSONGateway.Header.minSequence] {
            guard let value = UInt64(text) else { throw WireError(.invalidArgument, "ChordStore-Min-Sequence must be a whole number, not '\(text)'") }
            minSequence = value
        }
        if let text = headers[JSONGateway.Header.timeout] {
            guard let value = Int64(text), (1...86_400_000).contains(value) else {
                throw WireError(.invalidArgument, "ChordStore-Timeout must be milliseconds, 1 to 86400000, not '\(text)'")
            }
            timeout = .milliseconds(value)
        }
    }
}

/// The count of streams open on the gateway, bounded.
final class StreamSlots: Sendable {
    private let count = Mutex(0)

    /// Takes a slot if fewer than `limit` are taken.
    func take(upTo limit: Int) -> Bool {
        count.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    /// Gives a slot back.
    func give() { count.withLock { $0 -= 1 } }
}
