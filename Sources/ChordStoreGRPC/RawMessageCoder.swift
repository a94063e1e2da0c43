import GRPCCore

/// Messages as their serialized bytes: the registry's handlers parse requests and write
/// replies themselves, so the gRPC layer passes bytes through untouched (no second
/// mapping between protobuf and domain types).
struct RawMessageCoder: MessageSerializer, MessageDeserializer {
    typealias Message = [UInt8]

    func serialize<Bytes: GRPCContiguousBytes>(_ message: [UInt8]) throws -> Bytes { Bytes(message) }

    func deserialize<Bytes: GRPCContiguousBytes>(_ serializedMessageBytes: Bytes) throws -> [UInt8] {
        serializedMessageBytes.withUnsafeBytes { Array($0) }
    }
}
