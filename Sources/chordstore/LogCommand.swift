import ArgumentParser
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
    @Option(help: "Print at most this many events (0: all).") var limit: Int = 0

    func validate() throws {
        if limit < 0 { throw ValidationError("--limit must be 0 (all) or more") }
        if from == 0 { throw ValidationError("--from starts at 1, the first event") }
    }

    func run() async throws {
        try await withStore(global) { store in
            var printed = 0
            try store.forEachRecord(from: from) { sequence, record in
                if global.json {
                    Output.print(try RecordCodec.envelope(record, sequence: sequence).jsonString())
                } else {
                    Output.print(Output.eventLine(try RecordCodec.decode(record, sequence: sequence)))
                }
                printed += 1
                return limit == 0 || printed < limit
            }
            if printed == 0 && !global.json { Output.print("no events from \(from) on") }
        }
    }
}
