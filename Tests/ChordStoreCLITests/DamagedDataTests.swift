import Foundation
import TestSupport
import Testing

/// A server started on a data directory with a damaged log record.
@Suite("A damaged data directory")
struct DamagedDataTests {
    @Test("serve warns loudly at start, refuses writes, and ReadLog ends with DATA_LOSS naming the event, never its bytes")
    func damagedRecordServed() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("damaged-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        for i in 1...12 {
            let added = try await runChordstore(["--data", directory.path, "add", "title marker-\(i)-end"])
            try #require(added.status == 0, "\(added.stderr)")
        }
        #expect(try damage("marker-7-end", in: directory.appendingPathComponent("data.mdb")) > 0)

        let (server, port, log) = try await ServerCrashTests.serve(directory)
        defer { kill(server.processIdentifier, SIGTERM) }
        #expect(log.text.contains("critical"), "\(log.text)")
        #expect(log.text.contains("refuses writes"))
        #expect(log.text.contains("event 7"))
        let address = "127.0.0.1:\(port)"
        let read = try await runChordstore(["--server", address, "log"])
        #expect(read.status == 1)
        #expect(read.stderr.contains("DATA_LOSS"), "\(read.stderr)")
        #expect(read.stderr.contains("event 7"))
        #expect(!read.stderr.contains("marker"), "the error shows the record's bytes")
        let write = try await runChordstore(["--server", address, "add", "after the damage"])
        #expect(write.status == 1)
        #expect(write.stderr.contains("DATA_LOSS"), "\(write.stderr)")
        let list = try await runChordstore(["--server", address, "list"])
        #expect(list.status == 0, "reads of the views go on: \(list.stderr)")
    }
}
