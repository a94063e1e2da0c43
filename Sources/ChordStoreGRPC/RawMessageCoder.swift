public import GRPCCore

/// Messages as their serialized bytes: the registry's handlers parse requests and write
/// replies themselves, so the gRPC layer passes bytes through untouched (no second
/// mapping between protobuf and domain types). `chordstore bench grpc` calls with it too.
public struct RawMessageCoder: MessageSerializer, MessageDeserializer {
    /// A message is its bytes.
    public typealias Message = [UInt8]

    /// A coder.
    public init() {}

    /// `message` as it is.
    public func serialize<Bytes: GRPCContiguousBytes>(_ message: [UInt8]) throws -> Bytes { Bytes(message) }

    /// The bytes as they are.
    public func deserialize<Bytes: GRPCContiguousBytes>(_ serializedMessageBytes: Bytes) throws -> [UInt8] {
        serializedMessageBytes.withUnsafeBytes { Array($0) }
    }
}
