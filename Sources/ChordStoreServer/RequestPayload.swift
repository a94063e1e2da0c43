package import Foundation
package import SwiftProtobuf

/// A call's request as its transport delivers it: the request message's protobuf bytes
/// (the framed port, gRPC), or the message already parsed (JSON over HTTP, which parses
/// the body into the request message once). A handler reads it with ``decode(_:)``.
package enum RequestPayload: Sendable {
    case bytes(Data)
    case message(any SwiftProtobuf.Message)

    /// The request as `M`: the bytes decoded, or the parsed message as it is.
    package func decode<M: SwiftProtobuf.Message>(_ type: M.Type) throws -> M {
        switch self {
        case .bytes(let data):
            return try M(serializedBytes: data)
        case .message(let message):
            if let message = message as? M { return message }
            // Another type than the method's: through its bytes, as a framed call would.
            return try M(serializedBytes: message.serializedBytes() as [UInt8])
        }
    }
}
