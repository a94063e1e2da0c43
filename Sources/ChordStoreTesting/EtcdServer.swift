import ChordStoreClient
public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A one-member etcd of a test's (or `chordstore-check`'s) own, on free ports of its own,
/// with its data in memory (`/dev/shm`, where there is one): started, killed and started
/// again (same data), killed and removed when released. Debian's `etcd-server` (tools/test
/// installs it). In memory, etcd's fsyncs cost nothing: on a machine busy with other
/// tests' fsyncs, an etcd on disk can take seconds per write, longer than a lease.
///
/// ```swift
/// let etcd = try EtcdServer()
/// // serve --coordinator \(etcd.clientURL) ...
/// etcd.kill(); try etcd.start()
/// ```
public final class EtcdServer: @unchecked Sendable {
    /// Its client URL (`http://127.0.0.1:PORT`).
    public let clientURL: String
    /// Its log's directory.
    public let directory: URL
    /// Its data.
    public let dataDirectory: URL
    private let arguments: [String]
    private let ownsDirectory: Bool
    private let lock = NSLock()
    private var process: Process?

    /// TLS for etcd's client port: its certificate and key, and the authority whose
    /// client certificates it requires (`--client-cert-auth`), if any. PEM files.
    public struct TLS: Sendable {
        /// etcd's certificate (PEM).
        public var certificateFile: String
        /// Its private key (PEM).
        public var keyFile: String
        /// The authority whose client certificates etcd requires (`nil`: none required).
        public var clientCAFile: String?

        /// TLS settings.
        public init(certificateFile: String, keyFile: String, clientCAFile: String?) {
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.clientCAFile = clientCAFile
        }
    }

    /// Starts etcd on `host` (an address of this machine; ports free on loopback are
    /// taken), with its data under `directory` (a temporary one by default), serving its
    /// clients over TLS when given, and waits until it serves them (at most 30 s).
    public init(host: String = "127.0.0.1", directory: URL? = nil, tls: TLS? = nil) throws {
        guard let executable = Self.executable else {
            throw EtcdServerError("etcd is not installed: tools/test installs Debian's etcd-server (apt-get install etcd-server)")
        }
        let ports = try LoopbackPorts.free(2)
        self.directory = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("etcd-\(UUID().uuidString.prefix(8))")
        ownsDirectory = directory == nil
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        let memory = URL(fileURLWithPath: "/dev/shm")
        dataDirectory = FileManager.default.isWritableFile(atPath: memory.path)
            ? memory.appendingPathComponent("chordstore-etcd-\(UUID().uuidString.prefix(8))") : self.directory.appendingPathComponent("data")
        clientURL = "\(tls == nil ? "http" : "https")://\(host):\(ports[0])"
        let peer = "http://127.0.0.1:\(ports[1])"
        var arguments = [
            executable, "--name", "test", "--data-dir", dataDirectory.path,
            "--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "test=\(peer)",
        ]
        if let tls {
            arguments += ["--cert-file", tls.certificateFile, "--key-file", tls.keyFile]
            if let ca = tls.clientCAFile { arguments += ["--trusted-ca-file", ca, "--client-cert-auth"] }
        }
        self.arguments = arguments
        try start()
    }

    /// Starts etcd as ``init(host:directory:tls:)`` does, on a thread of its own: a test
    /// must not hold one of Swift concurrency's few threads while etcd starts.
    public static func start(host: String = "127.0.0.1", directory: URL? = nil, tls: TLS? = nil) async throws -> EtcdServer {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try EtcdServer(host: host, directory: directory, tls: tls) }) }
        }
    }

    /// Starts it again as ``start()`` does, on a thread of its own.
    public func restart() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Thread.detachNewThread { [self] in continuation.resume(with: Result { try start() }) }
        }
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(at: dataDirectory)
        if ownsDirectory { try? FileManager.default.removeItem(at: directory) }
    }

    /// The etcd executable, if installed.
    public static var executable: String? {
        ["/usr/bin/etcd", "/usr/local/bin/etcd"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts it (again, on the same data), and waits until it serves clients.
    public func start() throws {
        try lock.withLock {
            if let process, process.isRunning { return }
            let log = directory.appendingPathComponent("etcd.log")
            if !FileManager.default.fileExists(atPath: log.path) { _ = FileManager.default.createFile(atPath: log.path, contents: nil) }
            let handle = try FileHandle(forWritingTo: log)
            handle.seekToEndOfFile()
            let started = handle.offsetInFile
            let process = Process()
            process.executableURL = URL(fileURLWithPath: arguments[0])
            process.arguments = Array(arguments.dropFirst())
            process.standardOutput = handle
            process.standardError = handle
            try process.run()
            self.process = process
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                if let text = try? Data(contentsOf: log).dropFirst(Int(started)), String(decoding: text, as: UTF8.self).contains("ready to serve client requests") {
                    return
                }
                guard process.isRunning else { break }
                usleep(50_000)
            }
            throw EtcdServerError("etcd did not start within 30 s: see \(log.path)")
        }
    }

    /// SIGKILL, and waits for it to end.
    public func kill() {
        lock.withLock {
            guard let process, process.isRunning else { return }
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Its process id (0 when not running).
    public var pid: Int32 { lock.withLock { process?.isRunning == true ? process?.processIdentifier ?? 0 : 0 } }
}

/// Why a test etcd could not start.
public struct EtcdServerError: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String
    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}
