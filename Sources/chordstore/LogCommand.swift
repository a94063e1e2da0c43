import ChordStoreAPI
import ArgumentParser
import Foundation
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import SwiftProtobuf

/// `chordstore log [--from SEQ] [--limit N]`: the event history.
struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Print the event history.",
        discussion: "With --json, prints one EventEnvelope per line (JSON Lines), in protobuf's canonical JSON mapping.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "The first sequence number to print.") var from: UInt64 = 1
    @Option(parsing: .unconditional, help: "Print at most this many events (0: all).") var limit: Int = 0

    func validate() throws {
        if limit < 0 { throw ValidationError("--limit must be 0 (all) or more") }
        if from == 0 { throw ValidationError("--from starts at 1, the first event") }
    }

    func run() async throws {
        let json = global.json
        let printed = try await withAccess(global, readOnly: true) { store in
            let counter = Counter()
            try await store.events(from: from, limit: limit) { envelope in
                if json {
                    Output.print(try envelope.jsonString())
                } else {
                    Output.print(Output.eventLine(try RecordedEvent(envelope: envelope)))
                }
                counter.increment()
            }
            return counter.value
        }
        if printed == 0 && !json { Output.print("no events from \(from) on") }
    }
}

/// A count updated from a `@Sendable` callback.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
