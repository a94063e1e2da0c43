import ChordStoreDomain
import ChordStoreWire
import Hummingbird

extension HTTPResponse.Status {
    /// The HTTP status a call's status code is answered with, as grpc-gateway maps them
    /// (docs/PROTOCOL.md, "JSON over HTTP").
    init(_ code: StatusCode) {
        self = switch code {
        case .ok: .ok
        case .cancelled: HTTPResponse.Status(code: 499, reasonPhrase: "Client Closed Request")
        case .invalidArgument, .outOfRange, .failedPrecondition: .badRequest
        case .deadlineExceeded: .gatewayTimeout
        case .notFound: .notFound
        case .alreadyExists, .aborted: .conflict
        case .permissionDenied: .forbidden
        case .unauthenticated: .unauthorized
        case .resourceExhausted: .tooManyRequests
        case .unimplemented: .notImplemented
        case .unavailable: .serviceUnavailable
        case .unknown, .internal, .dataLoss: .internalServerError
        }
    }
}
