import ChordStoreWire
import GRPCCore

extension RPCError {
    /// A ChordStore error as a gRPC status: the same code and message; the leader of a
    /// refused write (`chordstore-leader`) and the current revision of an `ABORTED`
    /// (`chordstore-current-revision`) go in trailing metadata.
    init(wire error: WireError) {
        var metadata: Metadata = [:]
        if let leader = error.leader { metadata.addString(leader, forKey: "chordstore-leader") }
        if let revision = error.currentRevision { metadata.addString(String(revision), forKey: "chordstore-current-revision") }
        let code = Status.Code(rawValue: Int(error.code.rawValue)).flatMap { RPCError.Code($0) } ?? .unknown
        self.init(code: code, message: error.message, metadata: metadata)
    }
}

extension WireError {
    /// A gRPC error (one the transport raised while reading a request) in ChordStore's
    /// terms: the same code (the codes are gRPC's) and message.
    init(rpc error: RPCError) {
        self.init(StatusCode(rawValue: UInt32(error.code.rawValue)) ?? .unknown, error.message)
    }
}
