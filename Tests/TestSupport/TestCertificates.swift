import Foundation

/// Certificates made at run time with the `openssl` command (never committed): a
/// certificate authority, a server certificate for 127.0.0.1 and localhost, a client
/// certificate, and a second authority that signed neither.
public struct TestCertificates: Sendable {
    public let directory: URL
    public var ca: String { directory.appendingPathComponent("ca.pem").path }
    public var serverCertificate: String { directory.appendingPathComponent("server.pem").path }
    public var serverKey: String { directory.appendingPathComponent("server.key").path }
    public var clientCertificate: String { directory.appendingPathComponent("client.pem").path }
    public var clientKey: String { directory.appendingPathComponent("client.key").path }
    public var otherCA: String { directory.appendingPathComponent("other-ca.pem").path }

    /// Makes them in a new temporary directory.
    public static func make() throws -> TestCertificates {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("certs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let script = """
            set -e
            cd '\(directory.path)'
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=test-ca -keyout ca.key -out ca.pem 2>/dev/null
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=other-ca -keyout other-ca.key -out other-ca.pem 2>/dev/null
            for name in server client; do
              openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=$name -keyout $name.key -out $name.csr 2>/dev/null
              printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nbasicConstraints=CA:FALSE\\n' > $name.ext
              openssl x509 -req -in $name.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile $name.ext -out $name.pem 2>/dev/null
            done
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "openssl could not make the test certificates"])
        }
        return TestCertificates(directory: directory)
    }
}
