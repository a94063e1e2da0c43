public import Foundation
import NIOSSL

/// How a server protects its calls (docs/SECURITY.md): who may make them, and TLS.
public struct ServerSecurity: Sendable {
    /// How calls are authenticated; ``Authenticator/Mode/none`` only on loopback.
    public var authentication: Authenticator.Mode
    /// TLS on every connection (`nil`: plaintext).
    public var tls: ServerTLS?
    /// How failed authentications are slowed down and cut off, per address.
    public var guessing = FailedAuthentications()
    /// When the node's admin token was made (its file's time; `nil`: now).
    public var localAdminCreated: Date?

    /// The security settings.
    public init(authentication: Authenticator.Mode, tls: ServerTLS? = nil) {
        self.authentication = authentication
        self.tls = tls
    }

    /// No authentication and no TLS: a server that binds loopback only (tests, one machine).
    public static let loopbackOnly = ServerSecurity(authentication: .none)
}

/// A server's TLS settings, loaded once: its certificate and key, and (mutual TLS) the
/// certificate authority whose certificates clients must show.
public struct ServerTLS: Sendable {
    let context: NIOSSLContext

    /// Loads `certificateFile` (PEM chain) and `keyFile` (PEM); with `clientCAFile`,
    /// refuses connections that show no certificate issued by it.
    public init(certificateFile: String, keyFile: String, clientCAFile: String? = nil) throws {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificateFile).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem)))
        configuration.minimumTLSVersion = .tlsv12
        if let clientCAFile {
            configuration.trustRoots = .file(clientCAFile)
            configuration.certificateVerification = .noHostnameVerification
        }
        context = try NIOSSLContext(configuration: configuration)
    }
}
