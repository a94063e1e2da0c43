public import ChordStoreDomain
import Foundation

/// One etcd server, as its client URL gives it: `http://HOST:PORT` or `https://HOST:PORT`
/// (port 2379 when none is given).
public struct EtcdEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// Its host name or IP address (an IPv6 one without brackets).
    public var host: String
    /// Its client port.
    public var port: Int
    /// Whether it is reached over TLS (`https`).
    public var usesTLS: Bool

    /// Parses a client URL; refused with `invalidArgument` unless it is `http://` or
    /// `https://` a host and an optional port, with no path.
    public init(parsing url: String) throws(ChordStoreError) {
        let refusal = ChordStoreError(.invalidArgument, "'\(url)' is not an etcd client URL such as http://127.0.0.1:2379 or https://etcd1.example:2379")
        let scheme: String
        if url.hasPrefix("http://") { scheme = "http" } else if url.hasPrefix("https://") { scheme = "https" } else { throw refusal }
        var rest = Substring(url.dropFirst(scheme.count + 3))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains("/"), !rest.contains("@") else { throw refusal }
        var host = rest
        var port = 2379
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw refusal }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let number = Int(after.dropFirst()) else { throw refusal }
                port = number
            }
        } else if let colon = rest.lastIndex(of: ":") {
            guard let number = Int(rest[rest.index(after: colon)...]) else { throw refusal }
            host = rest[..<colon]
            port = number
        }
        guard !host.isEmpty, (1...65_535).contains(port) else { throw refusal }
        self.host = String(host)
        self.port = port
        self.usesTLS = scheme == "https"
    }

    /// Parses a comma-separated list of client URLs (at least one).
    public static func list(parsing text: String) throws(ChordStoreError) -> [EtcdEndpoint] {
        let parts = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !parts.isEmpty else { throw ChordStoreError(.invalidArgument, "no etcd client URL in '\(text)'") }
        var endpoints: [EtcdEndpoint] = []
        for part in parts { endpoints.append(try EtcdEndpoint(parsing: part)) }
        return endpoints
    }

    /// The URL again.
    public var description: String {
        "\(usesTLS ? "https" : "http")://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }
}
