import GRPCCore
import SwiftProtobuf

/// A protobuf message as gRPC's message bytes, for the etcd calls (grpc-swift's protobuf
/// coders live in a package of their own, which this one coder does not justify).
struct ProtobufCoder<Message: SwiftProtobuf.Message>: MessageSerializer, MessageDeserializer {
    func serialize<Bytes: GRPCContiguousBytes>(_ message: Message) throws -> Bytes {
        do {
            return Bytes(try message.serializedBytes() as [UInt8])
        } catch {
            throw RPCError(code: .invalidArgument, message: "cannot encode \(Message.protoMessageName): \(error)")
        }
    }

    func deserialize<Bytes: GRPCContiguousBytes>(_ serializedMessageBytes: Bytes) throws -> Message {
        do {
            return try serializedMessageBytes.withUnsafeBytes { try Message(serializedBytes: Array($0)) }
        } catch {
            throw RPCError(code: .internalError, message: "cannot decode \(Message.protoMessageName): \(error)")
        }
    }
}
