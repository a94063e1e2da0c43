import ChordStoreServer
import ChordStoreWire
import Foundation
import SwiftProtobuf
import Testing

/// ``ServiceDispatcher/messages`` (the types the HTTP endpoint's JSON calls decode and
/// render) against proto/chordstore/v1/rpc.proto: the same methods, the same messages.
@Suite("Method message types")
struct MethodMessagesTests {
    @Test("every rpc of rpc.proto has its request and reply types, and every method of the registry is an rpc")
    func matchesTheProto() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let proto = try String(contentsOf: root.appendingPathComponent("proto/chordstore/v1/rpc.proto"), encoding: .utf8)
        let rpc = try Regex(#"rpc (\w+)\((\w+)\) returns \((?:stream )?(\w+)\)"#)
        var declared: [String: (String, String)] = [:]
        for match in proto.matches(of: rpc) {
            let parts = match.output.map { $0.substring.map(String.init) ?? "" }
            declared["chordstore.v1.ChordStore/\(parts[1])"] = ("chordstore.v1.\(parts[2])", "chordstore.v1.\(parts[3])")
        }
        #expect(declared.count == Method.allCases.count, "rpc.proto declares \(declared.count) methods; Method has \(Method.allCases.count)")
        for method in Method.allCases {
            let types = try #require(ServiceDispatcher.messages[method], "no message types for \(method.rawValue)")
            let wanted = try #require(declared[method.rawValue], "\(method.rawValue) is not in rpc.proto")
            #expect(types.request.protoMessageName == wanted.0, "\(method.rawValue) request")
            #expect(types.reply.protoMessageName == wanted.1, "\(method.rawValue) reply")
            #expect(ServiceDispatcher.registry[method] != nil, "\(method.rawValue) has no handler")
        }
    }
}
