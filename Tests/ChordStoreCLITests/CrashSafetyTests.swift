import ChordStoreDomain
import ChordStoreEngine
import Foundation
import TestSupport
import Testing

/// A child process appends durable commands in a loop and is killed with SIGKILL at a
/// random moment; every command it was told had committed must be there after reopening,
/// the log must have no gap, and verify must pass.
@Suite("Crash safety")
struct CrashSafetyTests {
    @Test("SIGKILL during appends loses no acknowledged command (20 rounds)")
    func killDuringAppends() async throws {
        try await onOwnThread {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("chordstore-crash-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            var generator = SplitMix64(seed: UInt64(Date().timeIntervalSince1970))
            var acknowledged: [UInt64: UUID] = [:]
            for round in 0..<20 {
                let process = Process()
                process.executableURL = try chordstoreExecutable()
                process.arguments = [
                    "bench", "append", "--data", directory.path, "--callers", "4",
                    "--count", "10000000", "--seconds", "30", "--print-acks",
                ]
                let pipe = Pipe()
                process.standardOutput = pipe
                process.standardError = FileHandle.nullDevice
                try process.run()
                let output = OutputCollector(pipe.fileHandleForReading)
                // Some rounds die while opening the store, most in the middle of appending.
                let waitForFirstAck = round % 5 != 0
                let start = Date()
                while waitForFirstAck && !output.text.contains("\n") && Date().timeIntervalSince(start) < 20 {
                    try await Task.sleep(for: .milliseconds(2))
                }
                try await Task.sleep(for: .microseconds(generator.next() % 250_000))
                kill(process.processIdentifier, SIGKILL)
                try await offPool { process.waitUntilExit() }
                #expect(process.terminationReason == .uncaughtSignal, "round \(round): the child exited by itself")

                // Only complete lines were acknowledged before the kill.
                let text = try await offPool { output.finish() }
                for line in text.split(separator: "\n", omittingEmptySubsequences: true).dropLast(text.hasSuffix("\n") ? 0 : 1) {
                    let fields = line.split(separator: " ")
                    guard fields.count == 3, fields[0] == "ack", let sequence = UInt64(fields[1]), let id = UUID(uuidString: String(fields[2])) else {
                        Issue.record("round \(round): unexpected output line '\(line)'")
                        continue
                    }
                    acknowledged[sequence] = id
                }

                let store = try ChordStore.open(at: directory)
                defer { store.close() }
                let profile = try store.profile()
                #expect(profile.lastSequence >= acknowledged.keys.max() ?? 0, "round \(round)")
                for (sequence, id) in acknowledged {
                    guard try store.chordset(id) != nil else {
                        Issue.record("round \(round): acknowledged event \(sequence) (chordset \(id)) is missing")
                        return
                    }
                }
                let report = try store.verify()
                #expect(report.isSound, "round \(round): \(String(describing: report.problem))")
                #expect(report.events == profile.lastSequence)
            }
            #expect(acknowledged.count > 100, "the child should have acknowledged commands before most kills")
        }
    }
}
