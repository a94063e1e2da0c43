import ChordStoreAPI
@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf
import TestSupport
import Testing

/// The same refusals over the framed protocol, gRPC (Python's grpcio, reading the
/// reason from the `google.rpc.ErrorInfo` of `grpc-status-details-bin`) and JSON over
/// HTTP: the same status code and the same reason on all three (docs/PROTOCOL.md §3).
@Suite("Refusal reasons on every transport")
struct RefusalReasonTests {
    /// A call to refuse: its method, request (protobuf JSON), the store it names, and the
    /// token it shows (`nil`: none), with the code and reason it must get.
    struct Case {
        var method: String
        var request: String = "{}"
        var store: String = ""
        var token: String?
        var code: StatusCode
        var reason: ErrorReason
    }

    @Test("each refusal has one code and one reason, whichever transport carries it")
    func sameRefusalsEverywhere() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reasons-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let served = try await ServedChordstore.start(directory, [], http: true, grpc: true)
        defer { served.stopIfRunning() }
        let admin = try String(contentsOf: directory.appendingPathComponent("admin.token"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let setup = try await Connection.connect(host: "127.0.0.1", port: served.port, credentials: ClientCredentials(token: admin))
        for name in ["a", "b"] {
            _ = try await setup.call(.createStore, Chordstore_V1_CreateStoreRequest.with { $0.name = name }, as: Chordstore_V1_StoreInfo.self)
        }
        func token(_ role: Chordstore_V1_TokenRole) async throws -> String {
            try await setup.call(.createToken, Chordstore_V1_CreateTokenRequest.with {
                $0.role = role
                $0.store = "a"
            }, as: Chordstore_V1_CreatedToken.self).secret
        }
        let (readOnly, readWrite) = (try await token(.readOnly), try await token(.readWrite))
        let added = try await setup.call(.addChordset, Chordstore_V1_AddChordsetRequest.with { $0.title = "here" }, as: Chordstore_V1_CommandReply.self)
        let chordset = added.event.chordsetAdded.chordset.id.base64EncodedString()
        await setup.close()

        let cases: [Case] = [
            Case(method: "ListChordsets", token: nil, code: .unauthenticated, reason: .tokenRequired),
            Case(method: "ListChordsets", token: "cs1.nobody.\(String(repeating: "A", count: 43))", code: .unauthenticated, reason: .tokenInvalid),
            Case(method: "ListChordsets", store: "nosuch", token: admin, code: .notFound, reason: .storeNotFound),
            Case(method: "GetChordset", request: #"{"chordset_id": "\#(Data(repeating: 7, count: 16).base64EncodedString())"}"#, token: admin, code: .notFound, reason: .chordsetNotFound),
            Case(method: "AddChordset", request: #"{"title": "no"}"#, store: "a", token: readOnly, code: .permissionDenied, reason: .readOnlyToken),
            Case(method: "ListChordsets", store: "b", token: readOnly, code: .permissionDenied, reason: .otherStore),
            Case(method: "CreateStore", request: #"{"name": "c"}"#, store: "a", token: readWrite, code: .permissionDenied, reason: .adminOnly),
            Case(method: "Undo", request: #"{"context": {"session": "nobody-yet"}}"#, store: "a", token: readWrite, code: .failedPrecondition, reason: .nothingToUndo),
            Case(method: "AddChordset", request: #"{"title": "\#(String(repeating: "x", count: 300))"}"#, token: admin, code: .invalidArgument, reason: ErrorReason(.invalidArgument)),
            Case(method: "RenameChordset", request: #"{"chordset_id": "\#(chordset)", "title": "t", "context": {"expected": {"revision": "99"}}}"#, token: admin, code: .aborted, reason: .revisionMismatch),
            Case(method: "Replicate", token: admin, code: .permissionDenied, reason: .membersOnly),
        ]

        // Framed.
        var framed: [String] = []
        for refusal in cases {
            let connection = try await Connection.connect(
                host: "127.0.0.1", port: served.port, store: refusal.store, credentials: ClientCredentials(token: refusal.token))
            guard let method = ChordStoreAPI.Method(rawValue: "chordstore.v1.ChordStore/\(refusal.method)") else {
                Issue.record("no method \(refusal.method)")
                continue
            }
            let request = try method.spec.request.init(jsonString: refusal.request)
            do {
                if method == .replicate {
                    var stream = try await connection.stream(method, request, as: Chordstore_V1_ReplicationBatch.self).makeAsyncIterator()
                    _ = try await stream.next()
                } else {
                    _ = try await connection.callRaw(method, request, timeout: .seconds(10))
                }
                framed.append("OK")
            } catch let error as ClientError {
                framed.append("\(error.code) \(error.reason)")
            }
            await connection.close()
        }

        // JSON over HTTP.
        var json: [String] = []
        let port = try #require(served.httpPort)
        for refusal in cases {
            var headers = refusal.token.map { ["Authorization": "Bearer \($0)"] } ?? [:]
            if !refusal.store.isEmpty { headers["ChordStore-Store"] = refusal.store }
            let reply = try await httpRequest(port: port, method: "POST", path: "/api/chordstore.v1.ChordStore/\(refusal.method)", headers: headers, body: refusal.request)
            let body = reply.headers["content-type"]?.hasPrefix("text/event-stream") == true
                ? String(reply.body.split(separator: "\n").first { $0.hasPrefix("data: ") }?.dropFirst(6) ?? "")
                : reply.body
            let object = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
            json.append("\(object?["code"] as? String ?? "?") \(object?["reason"] as? String ?? "?")")
        }

        // gRPC.
        let file = directory.appendingPathComponent("refusals.json")
        let calls: [[String: Any]] = cases.map { refusal in
            var metadata: [String: String] = ["token": refusal.token ?? ""]
            if !refusal.store.isEmpty { metadata["store"] = refusal.store }
            return ["method": refusal.method, "request": (try? JSONSerialization.jsonObject(with: Data(refusal.request.utf8))) ?? [:], "metadata": metadata]
        }
        try JSONSerialization.data(withJSONObject: calls).write(to: file)
        let result = try await GRPCEndpointTests.scenario(["refusals", file.path], served, directory: directory)
        let grpc = (result["results"] as? [[String]] ?? []).map { $0.joined(separator: " ") }

        let expected = cases.map { "\($0.code) \($0.reason)" }
        let replicateIndex = cases.firstIndex { $0.method == "Replicate" } ?? cases.count
        #expect(framed == expected, "framed")
        // Replicate is the framed port's alone: the other endpoints do not serve it.
        #expect(Array(json.prefix(replicateIndex)) == Array(expected.prefix(replicateIndex)), "JSON: \(json)")
        #expect(Array(grpc.prefix(replicateIndex)) == Array(expected.prefix(replicateIndex)), "gRPC: \(grpc)")
        #expect(json.last == "UNIMPLEMENTED UNIMPLEMENTED" && grpc.last == "UNIMPLEMENTED UNIMPLEMENTED", "\(json.last ?? "") \(grpc.last ?? "")")
        #expect(try await served.terminate() == 0)
    }
}
