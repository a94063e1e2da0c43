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

    /// Credentials; none by default.
    public init(token: String? = nil, clusterSecret: String? = nil, tls: ClientTLS? = nil) {
        self.token = token
        self.clusterSecret = clusterSecret
        self.tls = tls
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
        } catch let error as ClientError {
            throw error
        } catch {
            throw ClientError(.invalidArgument, "cannot load the TLS settings: \(error)")
        }
    }
}
