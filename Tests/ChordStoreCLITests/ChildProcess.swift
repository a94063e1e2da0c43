import Foundation
import TestSupport
import Testing

/// The built `chordstore` executable, next to the test bundle in the products directory.
func chordstoreExecutable() throws -> URL {
    let candidates = [
        Bundle.main.bundleURL,
        Bundle.main.bundleURL.deletingLastPathComponent(),
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
    ]
    for directory in candidates {
        let url = directory.appendingPathComponent("chordstore")
        if FileManager.default.isExecutableFile(atPath: url.path) { return url }
    }
    throw ChildProcessError(message: "no chordstore executable near \(candidates.map(\.path))")
}

struct ChildProcessError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// The output and exit status of a finished `chordstore` run.
struct RunResult: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs `chordstore` with `arguments` to completion (at most `timeout` seconds).
func runChordstore(_ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval = 60) async throws -> RunResult {
    try await offPool { try blockingRun(arguments, environment: environment, timeout: timeout) }
}

private func blockingRun(_ arguments: [String], environment: [String: String], timeout: TimeInterval) throws -> RunResult {
    try runExecutable(try chordstoreExecutable(), arguments, environment: environment, timeout: timeout)
}

/// Runs `executable` with `arguments` to completion (at most `timeout` seconds), blocking.
func runExecutable(
    _ executable: URL, _ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval
) throws -> RunResult {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let collected = OutputCollector(out.fileHandleForReading)
    let errors = OutputCollector(err.fileHandleForReading)
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw ChildProcessError(message: "\(executable.lastPathComponent) \(arguments) ran over \(timeout) s")
    }
    process.waitUntilExit()
    return RunResult(status: process.terminationStatus, stdout: collected.finish(), stderr: errors.finish())
}

/// Reads a pipe on a background thread until end of file.
final class OutputCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        // read(2) itself, retried on EINTR: Foundation's availableData stops the whole
        // test process with a fatal error when a signal interrupts its read.
        let descriptor = handle.fileDescriptor
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                lock.withLock { data.append(contentsOf: buffer[..<count]) }
            }
            done.signal()
        }
    }

    /// What was read so far.
    var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }

    /// Waits for end of file and returns everything read.
    func finish() -> String {
        done.wait()
        return text
    }
}

/// A running `chordstore serve` with its protocol port and, when it serves HTTP, its HTTP
/// port, both read from its log.
struct ServedChordstore {
    let process: Process
    let port: Int
    let httpPort: Int?
    /// The gRPC endpoint's port, when started with `grpc`.
    var grpcPort: Int? = nil
    let log: OutputCollector

    /// Starts `chordstore serve --data DIRECTORY --port 0` with `arguments` (and
    /// `--http-port 0` if `http`, else none; `--grpc-port 0` if `grpc`); waits up to 60 s for its
    /// "serving" lines.
    static func start(_ directory: URL, _ arguments: [String], http: Bool = false, grpc: Bool = false) async throws -> ServedChordstore {
        let process = Process()
        process.executableURL = try chordstoreExecutable()
        process.arguments = ["serve", "--data", directory.path, "--port", "0", "--log-level", "notice"] + ["--http-port", http ? "0" : "none"]
            + (grpc ? ["--grpc-port", "0"] : []) + arguments
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let log = OutputCollector(pipe.fileHandleForReading)
        let start = Date()
        while Date().timeIntervalSince(start) < 60 {
            let text = log.text
            let port = Self.port(after: "address", in: text)
            let httpPort = Self.port(after: "http", in: text)
            let grpcPort = Self.port(after: "grpc", in: text)
            if let port, !http || httpPort != nil, !grpc || grpcPort != nil {
                return ServedChordstore(process: process, port: port, httpPort: httpPort, grpcPort: grpcPort, log: log)
            }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        process.terminate()
        throw ChildProcessError(message: "the server did not start: \(log.text)")
    }

    /// The port in `key=127.0.0.1:PORT` (text logs) or `"key":"127.0.0.1:PORT"` (JSON logs).
    static func port(after key: String, in text: String) -> Int? {
        for pattern in ["\(key)=127\\.0\\.0\\.1:(\\d+)", "\"\(key)\":\"127\\.0\\.0\\.1:(\\d+)\""] {
            if let range = text.range(of: pattern, options: .regularExpression) {
                return Int(text[range].split(separator: ":").last!.filter(\.isNumber))
            }
        }
        return nil
    }

    /// SIGTERM, then the exit status (a failure if it has not stopped within 30 s).
    /// Kills the server if it still runs: a test's `defer`, for when it failed before
    /// stopping the server itself.
    func stopIfRunning() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    func terminate() async throws -> Int32 {
        kill(process.processIdentifier, SIGTERM)
        return try await offPool { [process] in
            let deadline = Date().addingTimeInterval(30)
            while process.isRunning, Date() < deadline { usleep(10_000) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                throw ChildProcessError(message: "the server did not stop within 30 s of SIGTERM")
            }
            return process.terminationStatus
        }
    }
}
