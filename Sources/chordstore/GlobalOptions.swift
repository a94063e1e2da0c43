import ArgumentParser
import ChordStoreDomain
import ChordStoreEngine
import Foundation

/// Options every verb takes: where the store is, who is acting, and the output format.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "Talk to the server at HOST:PORT (the default, unless --data is given).", valueName: "HOST:PORT"))
    var server: String = ProcessInfo.processInfo.environment["CHORDSTORE_SERVER"] ?? "127.0.0.1:7420"

    @Option(name: .long, help: ArgumentHelp(
        "Open this data directory directly instead of talking to a server (refused while a server has it open).",
        valueName: "DIR"))
    var data: String?

    @Option(name: .long, help: ArgumentHelp(
        "The session (actor) recorded with each change, whose changes undo and redo walk through. Default: $CHORDSTORE_SESSION, or a stable id for this user kept in ~/.config/chordstore/session.",
        valueName: "NAME"))
    var session: String?

    @Option(name: .long, help: ArgumentHelp(
        "The store to work on: an isolated collection of chordsets in the server or data directory (1–64 characters of a-z, 0-9, '.', '_', '-'). Default: $CHORDSTORE_STORE, or 'default'.",
        valueName: "NAME"))
    var store: String?

    @Flag(name: .long, help: "Print results in protobuf's canonical JSON mapping.")
    var json = false

    /// The store the verb works on: `--store`, `$CHORDSTORE_STORE`, or `default`.
    var storeName: String {
        if let store { return store }
        if let named = ProcessInfo.processInfo.environment["CHORDSTORE_STORE"], !named.isEmpty { return named }
        return StoreName.default
    }

    func validate() throws {
        do {
            try StoreName.check(storeName)
        } catch {
            throw ValidationError(error.message)
        }
    }

    /// The data directory for verbs that always work on one (`--data`, or the default).
    var dataDirectory: String { data ?? ProcessInfo.processInfo.environment["CHORDSTORE_DATA"] ?? "chordstore-data" }

    /// Opens the store in ``dataDirectory``, reporting a rebuild of the views on a terminal.
    func openStore(options: ChordStore.Options = ChordStore.Options()) throws(ChordStoreError) -> ChordStore {
        let progress = ProgressReporter(label: "rebuilding the views")
        defer { progress.finish() }
        return try ChordStore.open(at: URL(fileURLWithPath: dataDirectory), options: options, progress: progress.report)
    }

    /// The session acting: `--session`, or this user's stable default.
    var sessionName: String { session ?? SessionFile.stableSession() }

    /// The context recorded with a command: a fresh command id, so a retry applies once.
    var context: CommandContext { CommandContext(session: sessionName, commandID: UUID().uuidString, store: storeName) }
}

/// Runs `body` with an open store in the data directory, closing it afterwards, and
/// prints a refusal as `CODE: message` with exit status 1.
func withStore<T>(_ global: GlobalOptions, _ body: (ChordStore) async throws -> T) async throws -> T {
    let store: ChordStore
    do {
        store = try global.openStore()
    } catch {
        throw Failure(error)
    }
    defer { store.close() }
    do {
        return try await body(store)
    } catch let error as ChordStoreError {
        throw Failure(error)
    }
}

/// Runs `body` against the server (`--server`), or the data directory when `--data` is
/// given; refusals print as `CODE: message` with exit status 1.
func withAccess<T>(_ global: GlobalOptions, _ body: (any StoreAccess) async throws -> T) async throws -> T {
    let access: any StoreAccess
    do {
        if global.data != nil {
            access = LocalAccess(store: try global.openStore(), name: global.storeName)
        } else {
            access = try await RemoteAccess.connect(global.server, store: global.storeName)
        }
    } catch let error as ChordStoreError {
        throw Failure(error)
    }
    do {
        let result = try await body(access)
        await access.close()
        return result
    } catch let error as ChordStoreError {
        await access.close()
        throw Failure(error)
    } catch {
        await access.close()
        throw error
    }
}

/// The default session of the CLI: one id per user, made once and kept in a file, so that
/// `chordstore undo` undoes this user's last change and not another user's.
enum SessionFile {
    static func stableSession() -> String {
        let environment = ProcessInfo.processInfo.environment
        if let session = environment["CHORDSTORE_SESSION"], !session.isEmpty { return session }
        let user = environment["USER"] ?? "user"
        let config = environment["XDG_CONFIG_HOME"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config")
        let file = config.appendingPathComponent("chordstore").appendingPathComponent("session")
        if let stored = try? String(contentsOf: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines),
           !stored.isEmpty, stored.utf8.count <= 128 {
            return stored
        }
        let made = "cli-\(user)-\(UUID().uuidString.prefix(8).lowercased())"
        do {
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data((made + "\n").utf8).write(to: file, options: .atomic)
            return made
        } catch {
            return "cli-\(user)"  // no writable home: a per-user name that is at least stable
        }
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
