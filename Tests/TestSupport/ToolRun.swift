import Foundation

/// Runs a program to its end off the cooperative pool, with `environment` added to this
/// process's, and returns its exit status and its standard output and error together.
public func runTool(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> (status: Int32, output: String) {
    try await offPool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new } }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
