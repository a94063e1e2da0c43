import ChordStoreAPI
import ChordStoreDomain
import ChordStoreProto
import ChordStoreServer
import Foundation
import SwiftProtobuf
import Testing

/// The method table (``ChordStoreAPI/MethodSpec``) against proto/chordstore/v1/rpc.proto
/// and the server's handlers: the same methods, the same messages, the same kinds.
@Suite("The method table")
struct MethodTableTests {
    @Test("every rpc of rpc.proto is declared once, with its request and reply types and whether it streams; every declared method has a handler of its kind")
    func matchesTheProtoAndTheHandlers() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let proto = try String(contentsOf: root.appendingPathComponent("proto/chordstore/v1/rpc.proto"), encoding: .utf8)
        let rpc = try Regex(#"rpc (\w+)\((\w+)\) returns \((stream )?(\w+)\)"#)
        var declared: [String: (request: String, reply: String, stream: Bool)] = [:]
        for match in proto.matches(of: rpc) {
            let parts = match.output.map { $0.substring.map(String.init) ?? "" }
            declared["chordstore.v1.ChordStore/\(parts[1])"] = ("chordstore.v1.\(parts[2])", "chordstore.v1.\(parts[4])", !parts[3].isEmpty)
        }
        #expect(declared.count == Method.allCases.count, "rpc.proto declares \(declared.count) methods; Method has \(Method.allCases.count)")
        #expect(MethodSpec.all.count == Method.allCases.count)
        for method in Method.allCases {
            let spec = method.spec
            let wanted = try #require(declared[method.rawValue], "\(method.rawValue) is not in rpc.proto")
            #expect(spec.request.protoMessageName == wanted.request, "\(method.rawValue) request")
            #expect(spec.reply.protoMessageName == wanted.reply, "\(method.rawValue) reply")
            #expect(spec.isStream == wanted.stream, "\(method.rawValue) streams in one and not the other")
            let handler = try #require(ServiceDispatcher.registry[method]?.handler, "\(method.rawValue) has no handler")
            let kindMatches = switch (spec.kind, handler) {
            case (.command, .command), (.pointRead, .pointRead), (.unary, .unary), (.unary, .inline), (.serverChange, .unary), (.serverStream, .serverStream): true
            default: false
            }
            #expect(kindMatches, "\(method.rawValue) is declared \(spec.kind) but handled as another kind")
        }
    }

    @Test("every domain command maps to a declared command method and back: its request message is that method's, and parses to the same command")
    func everyCommandHasItsMethod() throws {
        let id = UUID()
        let color = ChordColor(hue: 0.5, purity: 0.5, brightness: 0.5, alpha: 1)
        let commands: [Command] = [
            .addChordset(AddChordset(title: "a")), .renameChordset(id: id, title: "b"), .deleteChordset(id: id),
            .setChordColor(chordID: id, color: color), .setChordBPM(chordID: id, bpm: 90),
            .setControlsChord(SetControlsChord(bpm: 80, color: color)), .moveChordset(id: id, toIndex: 2), .deleteAll, .undo, .redo,
        ]
        var methods: Set<Method> = []
        for command in commands {
            let request = CommandMessages.request(for: command, context: Chordstore_V1_CommandContext())
            let spec = try #require(MethodSpec.command(for: request), "\(command) has no declared method")
            #expect(spec.kind == .command && ObjectIdentifier(spec.request) == ObjectIdentifier(type(of: request)))
            #expect(try CommandMessages.command(from: request) == command)
            methods.insert(spec.method)
        }
        #expect(methods == Set(Method.allCases.filter { $0.spec.kind == .command }), "each command method carries one of these commands")
    }
}
