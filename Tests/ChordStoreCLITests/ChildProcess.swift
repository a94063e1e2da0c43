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
        Thread.detachNewThread { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                lock.withLock { data.append(chunk) }
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
