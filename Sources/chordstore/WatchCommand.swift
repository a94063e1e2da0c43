import ChordStoreAPI
import ArgumentParser
@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf

/// `chordstore watch`: prints events as they happen (the change feed).
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print events as they are committed (the server's change feed).",
        discussion: prose("""
            Starts with the stored events from --from (catch-up), then prints each new one
            as it commits, in order, with no gap. If the connection drops or this reader
            falls behind, it subscribes again from where it was. Runs until interrupted,
            or until --count events were printed. Needs a server (--server).
            """))
    @OptionGroup var global: GlobalOptions
    @Option(help: "Start at this sequence number (1: the whole log).") var from: UInt64 = 1
    @Flag(help: "Only events committed from now on.") var now = false
    @Option(help: ArgumentHelp("Only this chordset's events (and delete-alls).", valueName: "ID")) var chordset: String?
    @Option(name: .customLong("kind"), help: ArgumentHelp("Only events of this kind (repeatable), e.g. chordset_renamed.", valueName: "KIND"))
    var kinds: [String] = []
    @Option(parsing: .unconditional, help: "Stop after printing this many events.") var count: Int?

    func validate() throws {
        guard global.data == nil else { throw ValidationError("watch follows a server's change feed: give --server, not --data") }
        if let count, count < 1 { throw ValidationError("--count must be 1 or more") }
        if from == 0 { throw ValidationError("--from starts at 1, the first event") }
        if kinds.count > 16 { throw ValidationError("at most 16 --kind options") }
    }

    func run() async throws {
        let chordsetID = try chordset.map { try parseID($0, what: "chordset id") }
        let client = try global.client(store: global.storeName)
        defer { Task { await client.close() } }
        var printed = 0
        do {
            // A first call, so that an absent server is reported at once.
            _ = try await client.profile()
            for try await envelope in client.subscribe(from: from, fromNow: now, chordsetID: chordsetID?.protoBytes, kinds: kinds) {
                // Unbuffered: each event shows up as it happens, even through a pipe.
                let line = global.json ? try envelope.jsonString() : Output.eventLine(try RecordedEvent(envelope: envelope))
                FileHandle.standardOutput.write(Data((line + "\n").utf8))
                printed += 1
                if let count, printed >= count { break }
            }
        } catch let error as ClientError {
            throw Failure(ChordStoreError(error.code, error.message, reason: error.reason))
        }
    }
}
