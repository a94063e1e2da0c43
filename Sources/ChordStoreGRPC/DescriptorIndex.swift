import SwiftProtobuf

/// The descriptors of the served protos (`Generated/descriptors.protoset`, made by
/// tools/generate-protos), indexed as the reflection service looks them up: by file
/// name, and by the fully qualified name of every message, enum, service and method.
struct DescriptorIndex: Sendable {
    /// Each file's descriptor, serialized, by file name (`chordstore/v1/rpc.proto`).
    private(set) var files: [String: [UInt8]] = [:]
    /// Each file's imports, by file name.
    private(set) var imports: [String: [String]] = [:]
    /// The file that declares each symbol (`chordstore.v1.ChordStore`,
    /// `chordstore.v1.ChordStore.AddChordset`, `chordstore.v1.Chordset`).
    private(set) var symbols: [String: String] = [:]
    /// Every service's fully qualified name, sorted.
    private(set) var services: [String] = []

    /// The index of the descriptor set the binary carries.
    static let served: DescriptorIndex = {
        do {
            return try DescriptorIndex(protoset: PackageResources.descriptors_protoset)
        } catch {
            preconditionFailure("the embedded descriptors.protoset does not decode: \(error)")
        }
    }()

    /// Indexes a serialized `google.protobuf.FileDescriptorSet`.
    init(protoset: [UInt8]) throws {
        let set = try Google_Protobuf_FileDescriptorSet(serializedBytes: protoset)
        for file in set.file {
            files[file.name] = try file.serializedBytes()
            imports[file.name] = file.dependency
            let prefix = file.package.isEmpty ? "" : file.package + "."
            for message in file.messageType { index(message, prefix: prefix, file: file.name) }
            for type in file.enumType { symbols[prefix + type.name] = file.name }
            for service in file.service {
                let name = prefix + service.name
                symbols[name] = file.name
                services.append(name)
                for method in service.method { symbols[name + "." + method.name] = file.name }
            }
        }
        services.sort()
    }

    /// `name` and the files it imports, transitively, each once, `name` first; empty if
    /// there is no such file.
    func withImports(_ name: String) -> [[UInt8]] {
        var seen: Set<String> = []
        var order: [String] = []
        var pending = [name]
        while let next = pending.popLast() {
            guard files[next] != nil, seen.insert(next).inserted else { continue }
            order.append(next)
            pending.append(contentsOf: (imports[next] ?? []).reversed())
        }
        return order.compactMap { files[$0] }
    }

    private mutating func index(_ message: Google_Protobuf_DescriptorProto, prefix: String, file: String) {
        let name = prefix + message.name
        symbols[name] = file
        for nested in message.nestedType { index(nested, prefix: name + ".", file: file) }
        for type in message.enumType { symbols[name + "." + type.name] = file }
    }
}
