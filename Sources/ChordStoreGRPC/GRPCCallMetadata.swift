import ChordStoreDomain
import ChordStoreServer
import ChordStoreWire
import GRPCCore

/// What a gRPC call's metadata says, in the framed protocol's terms (docs/PROTOCOL.md,
/// "The gRPC endpoint"): `authorization: Bearer …`, `store`, `session` and
/// `min-sequence` stand for the framed `Call`'s metadata and fields.
struct GRPCCallMetadata {
    /// The metadata the authenticator and the handlers read (`authorization`, `session`).
    var fields: [String: String] = [:]
    /// The store the call works on (empty: `default`).
    var store = ""
    /// Read your writes: the store event the read waits for (0: none).
    var minSequence: UInt64 = 0

    /// Reads `metadata`; a malformed `min-sequence` is `INVALID_ARGUMENT`.
    init(_ metadata: Metadata) throws(WireError) {
        func first(_ key: String) -> String? { metadata[stringValues: key].first { _ in true } }
        for key in ["authorization", "session", "cluster-secret"] {
            if let value = first(key) { fields[key] = value }
        }
        store = first("store") ?? ""
        if let text = first("min-sequence") {
            guard let value = UInt64(text) else { throw WireError(.invalidArgument, "min-sequence must be a whole number, not '\(text)'") }
            minSequence = value
        }
    }
}
