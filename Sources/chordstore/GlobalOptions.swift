import ArgumentParser
import ChordStoreDomain
import ChordStoreEngine
import Foundation

/// Options every verb that opens a store takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "The data directory (created if missing).", valueName: "DIR"))
    var data: String = ProcessInfo.processInfo.environment["CHORDSTORE_DATA"] ?? "chordstore-data"

    @Option(name: .long, help: ArgumentHelp("The session (actor) recorded with each change.", valueName: "NAME"))
    var session: String = ProcessInfo.processInfo.environment["USER"].map { "cli-\($0)" } ?? "cli"

    @Flag(name: .long, help: "Print results in protobuf's canonical JSON mapping.")
    var json = false

    /// Opens the store, reporting a view catch-up (after an interrupted rebuild) on a terminal.
    func openStore(options: ChordStore.Options = ChordStore.Options()) throws -> ChordStore {
        let progress = ProgressReporter(label: "replaying the log into the views")
        defer { progress.finish() }
        return try ChordStore.open(at: URL(fileURLWithPath: data), options: options, progress: progress.report)
    }

    /// The context recorded with a command.
    var context: CommandContext { CommandContext(session: session, commandID: UUID().uuidString) }
}

/// Runs `body` with an open store and closes it afterwards, printing a refusal as
/// `chordstore: CODE: message` and exiting 1.
func withStore<T>(_ global: GlobalOptions, _ body: (ChordStore) async throws -> T) async throws -> T {
    let store: ChordStore
    do {
        store = try global.openStore()
    } catch let error as ChordStoreError {
        throw Failure(error)
    }
    defer { store.close() }
    do {
        return try await body(store)
    } catch let error as ChordStoreError {
        throw Failure(error)
    }
}

/// A store error, reported on standard error with exit status 1.
struct Failure: Error, CustomStringConvertible {
    let error: ChordStoreError
    init(_ error: ChordStoreError) { self.error = error }
    var description: String { "\(error.code): \(error.message)" }
}

extension Failure: LocalizedError {
    var errorDescription: String? { description }
}

/// Parses a UUID in its text form or the base64 of its 16 bytes (as --json prints it).
func parseID(_ text: String, what: String = "id") throws -> UUID {
    if let id = UUID(uuidString: text) { return id }
    if let data = Data(base64Encoded: text), data.count == 16 {
        return try UUID(protoBytes: data)
    }
    throw ValidationError("'\(text)' is not a valid \(what): give a UUID like 6F1C2B9E-0D7A-4C1E-9B8F-3A2D1E0F4C5B or its base64 form")
}
