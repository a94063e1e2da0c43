import ChordStoreAPI
import ChordStoreDomain
import ChordStoreServer
import ChordStoreWire
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SwiftProtobuf
import Synchronization

/// The registry's methods as JSON over HTTP (docs/PROTOCOL.md, "JSON over HTTP"), for
/// the web console and for `curl`: `POST /api/<service>/<method>` with the request
/// message in protobuf's JSON mapping, answered by the reply message in JSON, or, for a
/// stream, by server-sent events. The calls run through the server's
/// ``ChordStoreServer/CallExecutor``, as every transport's do. The body is parsed into
/// the request message once, and the handler takes that message as it is.
struct JSONGateway: Sendable {
    let executor: CallExecutor
    let limits: HTTPEndpoint.CallLimits
    /// Fired when the endpoint's shutdown begins: streams end.
    let shutdown: OneShotSignal
    /// Fired when the shutdown's grace period ends: unary calls still running end.
    let graceOver: OneShotSignal
    private let openStreams: StreamSlots

    init(executor: CallExecutor, limits: HTTPEndpoint.CallLimits, shutdown: OneShotSignal, graceOver: OneShotSignal) {
        self.executor = executor
        self.limits = limits
        self.shutdown = shutdown
        self.graceOver = graceOver
        openStreams = StreamSlots(limit: limits.wire.maxConnections, perAddress: limits.wire.maxConnectionsPerAddress)
    }

    /// The request's header fields the calls read.
    enum Header {
        static let store = HTTPField.Name("ChordStore-Store")!
        static let session = HTTPField.Name("ChordStore-Session")!
        static let minSequence = HTTPField.Name("ChordStore-Min-Sequence")!
        static let timeout = HTTPField.Name("ChordStore-Timeout")!
        static let origin = HTTPField.Name("Origin")!
    }

    /// Answers a method other than POST on `/api/…`.
    static func wrongMethod() -> Response {
        var response = failure(WireError(.unimplemented, "calls are POST requests (docs/PROTOCOL.md §10)"))
        response.status = .methodNotAllowed
        response.headers[.allow] = "POST"
        return response
    }

    /// Answers `POST /api/<service>/<method>`.
    func call(_ name: String, _ request: Request, _ context: EndpointRequestContext) async -> Response {
        let started = ContinuousClock.now
        guard let method = Method(rawValue: name) else {
            return Self.failure(WireError(.unimplemented, "no method '\(name.prefix(200))' here: the methods are in proto/chordstore/v1/rpc.proto"))
        }
        let peer = CallPeer(address: context.remoteAddress?.ipAddress ?? "", port: context.remoteAddress?.port ?? 0)
        let call: CallHeaders
        let admitted: CallExecutor.Call
        let payload: RequestPayload
        do {
            try checkSameOrigin(request.headers, authority: request.head.authority ?? "")
            call = try CallHeaders(request.headers)
            admitted = try await executor.admit(
                method, metadata: call.fields, store: call.store, minSequence: call.minSequence, peer: peer, transport: .http)
            payload = .message(try await Self.decode(request, as: method.spec.request, limits: limits))
        } catch {
            return Self.failure(error)
        }
        let executor = self.executor
        guard admitted.isStream else {
            do {
                let bounds = CallBounds(timeout: call.timeout, shutdown: graceOver, started: started)
                let reply = try await bounds.run { () async throws(WireError) -> [UInt8] in
                    try await executor.unary(admitted, payload: payload)
                }
                return HTTPEndpoint.json(.ok, ByteBuffer(string: try Self.jsonText(reply, as: method.spec.reply) + "\n"))
            } catch {
                return Self.failure(error)
            }
        }
        let slot: StreamSlot
        do {
            slot = try openStreams.take(for: peer.address)
        } catch {
            return Self.failure(error)
        }
        // The client's going away ends the stream (a failed write shows it: keep-alive
        // comments find it on an idle stream).
        let closed = OneShotSignal()
        let bounds = CallBounds(timeout: call.timeout, shutdown: shutdown, started: started)
        let body = ServerSentEvents.body(
            keepAlive: limits.keepAlive, slowReader: limits.wire.slowReaderTimeout, closed: closed, channel: context.channel, slot: slot,
            status: { Self.statusText($0 ?? WireError(.ok, "")) }
        ) { emit in
            do throws(WireError) {
                try await bounds.run(cancelled: closed) { () async throws(WireError) in
                    try await executor.stream(admitted, payload: payload) { page throws(WireError) in
                        var buffer = ByteBuffer()
                        for message in page { buffer.writeString("data: \(try Self.jsonText(message.serialized, as: method.spec.reply))\n\n") }
                        try await emit(buffer)
                    }
                }
                return nil
            } catch {
                return error
            }
        }
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-store", .init("X-Accel-Buffering")!: "no"],
            body: body)
    }

    /// Refuses a call a web page of another origin makes (`PERMISSION_DENIED`): browsers
    /// send `Origin` with every cross-origin POST, and the console's own calls carry this
    /// server's (`https://` too, behind a TLS proxy). Without authentication
    /// (`--auth none`), a page could also reach the endpoint under a name of its own that
    /// resolves to 127.0.0.1 (DNS rebinding), so then the `Host` must name this machine's
    /// loopback: `localhost`, a 127.x.x.x address or `[::1]` (the endpoint listens on
    /// nothing else then).
    private func checkSameOrigin(_ headers: HTTPFields, authority host: String) throws(WireError) {
        if let origin = headers[Header.origin], origin != "http://\(host)", origin != "https://\(host)" {
            throw WireError(.permissionDenied, "a call from a page of another origin (\(origin)) is refused", reason: .otherOrigin)
        }
        if !executor.requiresCredentials {
            let name = host.hasPrefix("[") ? String(host.dropFirst().prefix { $0 != "]" }) : String(host.prefix { $0 != ":" })
            guard HostAddress.isLoopback(name) else {
                throw WireError(
                    .permissionDenied, "without authentication, calls must name the server by its loopback address or localhost (Host: \(host.prefix(200)))",
                    reason: .otherOrigin)
            }
        }
    }

    /// The request body (JSON; empty means `{}`) as the request message.
    private static func decode(
        _ request: Request, as type: any SwiftProtobuf.Message.Type, limits: HTTPEndpoint.CallLimits
    ) async throws(WireError) -> any SwiftProtobuf.Message {
        let (maxBytes, timeout) = (limits.wire.maxFrameSize, limits.wire.frameTimeout)
        let tooLarge = WireError(.resourceExhausted, "the request body is over \(maxBytes) bytes (--max-frame-size)")
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > maxBytes { throw tooLarge }
        let body: ByteBuffer
        do {
            body = try await CallBounds(timeout: timeout).run { () async throws(WireError) -> ByteBuffer in
                do {
                    return try await request.body.collect(upTo: maxBytes)
                } catch is NIOTooManyBytesError {
                    throw tooLarge
                } catch {
                    throw WireError(.invalidArgument, "cannot read the request body: \(error)")
                }
            }
        } catch {
            throw error.code == .deadlineExceeded ? WireError(.deadlineExceeded, "the request body did not arrive within \(timeout)") : error
        }
        let bytes = body.readableBytes == 0 ? Array("{}".utf8) : Array(buffer: body)
        do {
            return try type.init(jsonUTF8Bytes: bytes, options: JSONDecodingOptions())
        } catch {
            throw WireError(.invalidArgument, "the body is not a JSON \(type.protoMessageName): \(Self.explain(error))")
        }
    }

    /// What a JSON decoding error means, in words (swift-protobuf's cases print as code:
    /// `unknownField("bogus")`, `failure`).
    static func explain(_ error: any Error) -> String {
        guard let error = error as? JSONDecodingError else { return "\(error)" }
        switch error {
        case .unknownField(let name): return "it has no field \"\(name)\""
        case .failure: return "it is not a JSON object of the message's fields"
        case .malformedNumber, .numberRange, .leadingZero: return "a number is malformed or out of its field's range"
        case .malformedBool: return "a boolean field's value is not true or false"
        case .malformedString, .invalidUTF8: return "a string is malformed (bad escape or UTF-8)"
        case .unrecognizedEnumValue: return "an enum field has a value it does not define"
        case .illegalNull: return "null is not allowed there"
        case .truncated: return "the JSON ends early"
        case .trailingGarbage: return "there is more after the JSON object"
        case .conflictingOneOf: return "it sets two fields of which one only may be set"
        case .messageDepthLimit: return "it nests too deeply"
        case .malformedDuration, .malformedTimestamp, .malformedFieldMask: return "a duration, timestamp or field mask is malformed"
        case .malformedMap, .unquotedMapKey, .missingFieldNames, .schemaMismatch: return "it does not match the message's schema (\(error))"
        @unknown default: return "\(error)"
        }
    }

    /// A reply message's bytes, in protobuf's JSON mapping (with the .proto's names).
    private static func jsonText(_ reply: [UInt8], as type: any SwiftProtobuf.Message.Type) throws(WireError) -> String {
        do {
            var options = JSONEncodingOptions()
            options.preserveProtoFieldNames = true
            return try type.init(serializedBytes: reply).jsonString(options: options)
        } catch {
            throw WireError(.internal, "cannot render the reply \(type.protoMessageName) as JSON: \(error)")
        }
    }

    /// An error's JSON: `{"code": "NOT_FOUND", "reason": "STORE_NOT_FOUND", "message": …}`
    /// (no reason for `OK`), with the leader of a
    /// refused write and the current revision of an `ABORTED` when there are.
    private static func statusText(_ error: WireError) -> String {
        var fields: [String: any Sendable] = ["code": "\(error.code)", "message": error.message]
        if error.code != .ok { fields["reason"] = error.reason.rawValue }
        if let leader = error.leader { fields["leader"] = leader }
        if let revision = error.currentRevision { fields["current_revision"] = String(revision) }
        let data = (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// A refusal: the status code's HTTP status, and the error's JSON.
    static func failure(_ error: WireError) -> Response {
        HTTPEndpoint.json(HTTPResponse.Status(error.code), ByteBuffer(string: statusText(error) + "\n"))
    }
}
