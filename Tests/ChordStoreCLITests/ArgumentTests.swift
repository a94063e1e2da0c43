@testable import chordstore
import Foundation
import Testing

@Suite("chordstore arguments")
struct ArgumentTests {
    @Test("global options before the verb move after it; others stay put")
    func hoisting() {
        #expect(ChordStoreCLI.hoistingGlobalOptions(["--data", "d", "--json", "list", "--limit", "3"])
            == ["list", "--limit", "3", "--data", "d", "--json"])
        #expect(ChordStoreCLI.hoistingGlobalOptions(["--data=d", "add", "--", "--title-like-this"])
            == ["add", "--data=d", "--", "--title-like-this"])
        #expect(ChordStoreCLI.hoistingGlobalOptions(["add", "--data", "d"]) == ["add", "--data", "d"])
    }

    @Test("ids are accepted as UUID text and as the base64 that --json prints")
    func ids() throws {
        let text = "2F4E98F2-EA9B-4DFD-BB09-3698CD8AA479"
        #expect(try parseID(text).uuidString == text)
        #expect(try parseID("L06Y8uqbTf27CTaYzYqkeQ==").uuidString == text)
        #expect(throws: (any Error).self) { try parseID("not-an-id") }
    }

    @Test("serve refuses limits that cannot work, naming the option")
    func serveLimits() async throws {
        for (arguments, message) in [
            (["--max-connections-per-address", "0"], "--max-connections-per-address must be positive"),
            (["--handshake-timeout", "0"], "--handshake-timeout and --frame-timeout must be 1...3600"),
            (["--frame-timeout", "4000"], "--handshake-timeout and --frame-timeout must be 1...3600"),
            (["--restore-point-interval", "0"], "--restore-point-interval must be 0.01...3600 seconds"),
            (["--live-state", "--live-state-save-events", "0"], "--live-state-save-events must be at least 1"),
            (["--live-state-save-events", "50"], "--live-state-save-events is for --live-state"),
            (["--max-state-memory", "1GiB"], "--max-state-memory is for --live-state"),
            (["--live-state", "--max-state-memory", "lots"], "--max-state-memory takes a size such as 512MiB or 4GiB, or none"),
            (["--live-state", "--max-state-memory", "0"], "--max-state-memory takes a size such as 512MiB or 4GiB, or none"),
            (["--max-buffered-bytes", "1000"], "--max-buffered-bytes must be at least --max-frame-size"),
            (["--node", ""], "--node must be 1...255 bytes with no control characters"),
            (["--node", "a\nb"], "--node must be 1...255 bytes with no control characters"),
        ] {
            let result = try await runChordstore(["serve", "--port", "0"] + arguments)
            #expect(result.status != 0)
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
    }

    @Test("bench append --readers reads while it appends and says how fast; a --readers out of range is refused")
    func benchReaders() async throws {
        let result = try await runChordstore(["bench", "append", "--in-memory", "--count", "300", "--callers", "4", "--readers", "2"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("append: 300 events, 4 callers, in-memory"), "\(result.stdout)")
        #expect(result.stdout.contains("reads/s from 2 reader threads meanwhile"), "\(result.stdout)")
        let quiet = try await runChordstore(["bench", "append", "--in-memory", "--count", "50", "--callers", "2"])
        #expect(!quiet.stdout.contains("reader threads"), "\(quiet.stdout)")
        let refused = try await runChordstore(["bench", "append", "--in-memory", "--readers", "65"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("--readers must be 0...64"), "\(refused.stderr)")
    }
}
