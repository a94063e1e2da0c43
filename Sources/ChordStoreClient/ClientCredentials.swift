import ChordStoreDomain
import ChordStoreWire
import NIOSSL

/// What a client shows the server (docs/SECURITY.md): a bearer token, the cluster secret
/// (members only), and TLS.
public struct ClientCredentials: Sendable {
    /// Sent with every call as the metadata `authorization: Bearer <token>`.
    public var token: String?
    /// Sent with every call as the metadata `cluster-secret` (replication between members).
    public var clusterSecret: String?
    /// TLS for the connection (`nil`: plaintext).
    public var tls: ClientTLS?
    /// The only servers (`HOST:PORT`) ``token`` is shown to (`nil`: every server the
    /// client calls, leaders that its servers name included). A token found on this
    /// machine (a server's own `DATA/admin.token`) is kept for the loopback server it was
    /// found for, so that a redirect to another machine never carries it there
    /// (docs/SECURITY.md).
    public var tokenServers: Set<String>?

    /// Credentials; none by default.
    public init(token: String? = nil, clusterSecret: String? = nil, tls: ClientTLS? = nil, tokenServers: Set<String>? = nil) {
        self.token = token
        self.clusterSecret = clusterSecret
        self.tls = tls
        self.tokenServers = tokenServers
    }

    /// Whether the token is kept from `address` (`HOST:PORT`): it has one, and
    /// ``tokenServers`` leaves that server out.
    public func withholdsToken(from address: String) -> Bool {
        guard let tokenServers, let token, !token.isEmpty else { return false }
        return !tokenServers.contains(address)
    }

    /// The credentials shown to the server at `address`: these, without the token if it
    /// is kept from that server.
    func shown(to address: String) -> ClientCredentials {
        guard withholdsToken(from: address) else { return self }
        var shown = self
        shown.token = nil
        return shown
    }

    /// The metadata the credentials add to every call.
    var metadata: [String: String] {
        var metadata: [String: String] = [:]
        if let token, !token.isEmpty { metadata["authorization"] = "Bearer \(token)" }
        if let clusterSecret, !clusterSecret.isEmpty { metadata["cluster-secret"] = clusterSecret }
        return metadata
    }
}

/// A client's TLS settings, loaded once: whom to trust, and the certificate it shows
/// when the server asks for one (mutual TLS).
public struct ClientTLS: Sendable {
    let context: NIOSSLContext
    /// Whether the settings are the system's own (its trust store, no client certificate):
    /// on Apple platforms such a connection uses the system's TLS (``ConnectionBootstrap``).
    let usesSystemTrust: Bool

    /// Trusts the certificates in `caFile` (PEM), or the system's roots when `nil`; shows
    /// `certificateFile` with `keyFile` (PEM) when given. The server's certificate must
    /// name the host connected to (a DNS name or an IP address).
    public init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil) throws(ClientError) {
        do {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.minimumTLSVersion = .tlsv12
            if let caFile { configuration.trustRoots = .file(caFile) }
            if let certificateFile, let keyFile {
                configuration.certificateChain = try NIOSSLCertificate.fromPEMFile(certificateFile).map { .certificate($0) }
                configuration.privateKey = .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem))
            } else if certificateFile != nil || keyFile != nil {
                throw ClientError(.invalidArgument, "a client certificate needs both its file and its key's")
            }
            context = try NIOSSLContext(configuration: configuration)
            usesSystemTrust = caFile == nil && certificateFile == nil
        } catch let error as ClientError {
            throw error
        } catch {
            throw ClientError(.invalidArgument, "cannot load the TLS settings: \(error)")
        }
    }
}
