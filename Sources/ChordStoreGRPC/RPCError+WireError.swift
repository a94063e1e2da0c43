import ChordStoreDomain
import ChordStoreWire
import Foundation
import GRPCCore
import SwiftProtobuf

extension RPCError {
    /// A ChordStore error as a gRPC status: the same code and message; the reason in a
    /// `google.rpc.ErrorInfo` of the `grpc-status-details-bin` trailer (as gRPC's richer
    /// error model has it); the leader of a refused write (`chordstore-leader`) and the
    /// current revision of an `ABORTED` (`chordstore-current-revision`) in trailing
    /// metadata too.
    init(wire error: WireError) {
        var metadata: Metadata = [:]
        if let leader = error.leader { metadata.addString(leader, forKey: "chordstore-leader") }
        if let revision = error.currentRevision { metadata.addString(String(revision), forKey: "chordstore-current-revision") }
        if let details = try? Self.details(of: error) { metadata.addBinary(details, forKey: "grpc-status-details-bin") }
        let code = Status.Code(rawValue: Int(error.code.rawValue)).flatMap { RPCError.Code($0) } ?? .unknown
        self.init(code: code, message: error.message, metadata: metadata)
    }

    /// The `google.rpc.Status` of `error`, with its `google.rpc.ErrorInfo`.
    private static func details(of error: WireError) throws -> [UInt8] {
        let info = Google_Rpc_ErrorInfo.with {
            $0.reason = error.reason.rawValue
            $0.domain = "chordstore.v1"
            if let leader = error.leader { $0.metadata["leader"] = leader }
            if let revision = error.currentRevision { $0.metadata["current_revision"] = String(revision) }
        }
        return try Google_Rpc_Status.with {
            $0.code = Int32(error.code.rawValue)
            $0.message = error.message
            $0.details = [try Google_Protobuf_Any(message: info)]
        }.serializedBytes()
    }
}

extension WireError {
    /// A gRPC error (one the transport raised while reading a request) in ChordStore's
    /// terms: the same code (the codes are gRPC's) and message.
    init(rpc error: RPCError) {
        self.init(StatusCode(rawValue: UInt32(error.code.rawValue)) ?? .unknown, error.message)
    }
}
