/// How the coordinator's client shows itself to etcd over TLS (`https://` endpoints):
/// the authority that signed etcd's certificate, and, for etcd's `--client-cert-auth`,
/// this member's certificate and key. PEM files.
public struct EtcdTLS: Sendable, Hashable {
    /// The authority that issued etcd's server certificate (`nil`: the system's roots).
    public var caFile: String?
    /// The client certificate to show (mutual TLS); needs ``keyFile``.
    public var certificateFile: String?
    /// The private key of ``certificateFile``.
    public var keyFile: String?

    /// TLS settings.
    public init(caFile: String?, certificateFile: String?, keyFile: String?) {
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.keyFile = keyFile
    }
}
