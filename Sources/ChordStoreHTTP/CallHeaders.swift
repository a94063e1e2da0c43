import ChordStoreDomain
import ChordStoreWire
import HTTPTypes

/// What a JSON call's headers say, in the framed protocol's terms: `Authorization:
/// Bearer …`, `ChordStore-Store`, `ChordStore-Session`, `ChordStore-Min-Sequence` and
/// `ChordStore-Timeout` (milliseconds).
struct CallHeaders {
    /// The metadata the authenticator and the handlers read (`authorization`, `session`).
    var fields: [String: String] = [:]
    /// The store the call works on (empty: `default`).
    var store = ""
    /// Read your writes: the store event the read waits for (0: none).
    var minSequence: UInt64 = 0
    /// The call's deadline, from when it arrived (`nil`: none).
    var timeout: Duration?

    /// Reads `headers`; a malformed number is `INVALID_ARGUMENT`.
    init(_ headers: HTTPFields) throws(WireError) {
        if let value = headers[.authorization] { fields["authorization"] = value }
        if let value = headers[JSONGateway.Header.session], !value.isEmpty { fields["session"] = value }
        store = headers[JSONGateway.Header.store] ?? ""
        if let text = headers[JSONGateway.Header.minSequence] {
            guard let value = UInt64(text) else { throw WireError(.invalidArgument, "ChordStore-Min-Sequence must be a whole number, not '\(text)'") }
            minSequence = value
        }
        if let text = headers[JSONGateway.Header.timeout] {
            guard let value = Int64(text), (1...86_400_000).contains(value) else {
                throw WireError(.invalidArgument, "ChordStore-Timeout must be milliseconds, 1 to 86400000, not '\(text)'")
            }
            timeout = .milliseconds(value)
        }
    }
}
