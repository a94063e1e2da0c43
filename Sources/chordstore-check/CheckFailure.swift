import ArgumentParser
import Foundation

/// A failure of the checker itself (not an anomaly it found).
struct CheckFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension CheckFailure {
    /// Runs a check and prints its report as JSON (snake_case keys) on standard output:
    /// exit status 1 when it did not pass, 2 (and the reason on standard error) when the
    /// check itself could not run.
    static func reporting(_ check: () async throws -> (report: any Encodable, passed: Bool)) async throws {
        do {
            let (report, passed) = try await check()
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            encoder.keyEncodingStrategy = .convertToSnakeCase
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
            if !passed { throw ExitCode(1) }
        } catch let failure as CheckFailure {
            FileHandle.standardError.write(Data("chordstore-check: \(failure)\n".utf8))
            throw ExitCode(2)
        }
    }
}
