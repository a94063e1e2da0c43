import ChordStoreAPI
import ArgumentParser
@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreServer
import ChordStoreWire
import Foundation
import SwiftProtobuf

/// Options every verb takes: where the store is, who is acting, and the output format.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "Talk to the server at HOST:PORT (the default, unless --data is given; an IPv6 address in brackets, [::1]:7420); several members of a cluster, comma-separated, to follow its leader through a failover.",
        valueName: "HOST:PORT[,HOST:PORT...]"))
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

    @Option(name: .long, help: ArgumentHelp(
        "The bearer token to show the server (visible to other users in the process list: prefer --token-file or $CHORDSTORE_TOKEN). Default: $CHORDSTORE_TOKEN, $CHORDSTORE_TOKEN_FILE, or, for a server on a loopback address, the admin token the server wrote in its data directory: $CHORDSTORE_DATA/admin.token or ./chordstore-data/admin.token.",
        valueName: "TOKEN"))
    var token: String?

    @Option(name: .long, help: ArgumentHelp("Read the bearer token from this file (its first line).", valueName: "FILE"))
    var tokenFile: String?

    @Flag(name: .long, help: "Connect with TLS, trusting the system's certificate authorities (--tls-ca names another).")
    var tls = false

    @Option(name: .long, help: ArgumentHelp("Connect with TLS, trusting the certificate authority in this file (PEM).", valueName: "FILE"))
    var tlsCa: String?

    @Option(name: .long, help: ArgumentHelp("Mutual TLS: the client certificate to show (PEM); needs --tls-key.", valueName: "FILE"))
    var tlsCert: String?

    @Option(name: .long, help: ArgumentHelp("The private key of --tls-cert (PEM).", valueName: "FILE"))
    var tlsKey: String?

    @Option(name: .long, help: ArgumentHelp(
        "Show the cluster secret in this file, as a cluster member does: `promote` needs it.", valueName: "FILE"))
    var clusterSecretFile: String?

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
        guard token == nil || tokenFile == nil else { throw ValidationError("give --token or --token-file, not both") }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        // A usage error (64), found before anything is done (unused with --data; an
        // address from $CHORDSTORE_SERVER is refused when a verb needs it, exit 1).
        if data == nil, Self.serverGiven {
            do throws(ChordStoreError) { _ = try serverAddresses(server) } catch { throw ValidationError(error.message) }
        }
    }

    /// What the CLI shows the server: the token (``tokenSource``), the cluster secret if
    /// asked, and TLS if asked.
    func credentials() throws(ChordStoreError) -> ClientCredentials {
        var credentials = ClientCredentials()
        do {
            let (token, found) = try resolvedToken()
            credentials.token = token
            // A token found in a data directory goes to the loopback servers it was found
            // for and nowhere else, redirects included.
            if found { credentials.tokenServers = Set(try serverAddresses(server)) }
            credentials.clusterSecret = try clusterSecretFile.map { try SecretFile.read($0, what: "the cluster secret") }
        } catch {
            throw ChordStoreError(.invalidArgument, "\(error)")
        }
        if tls || tlsCa != nil || tlsCert != nil {
            do {
                credentials.tls = try ClientTLS(caFile: tlsCa, certificateFile: tlsCert, keyFile: tlsKey)
            } catch {
                throw ChordStoreError(.invalidArgument, error.message)
            }
        }
        return credentials
    }

    /// The token: `--token`, `--token-file`, `$CHORDSTORE_TOKEN`, `$CHORDSTORE_TOKEN_FILE`,
    /// or, for a server on a loopback address, the admin token in the data directory
    /// (``dataDirectory``) while a server runs on it (it holds the directory's lock). A
    /// token read from the data directory is never sent to another machine, nor to a
    /// loopback port while no server has that directory open. `found` tells a token read
    /// from the data directory from one given.
    private func resolvedToken() throws -> (token: String?, found: Bool) {
        let environment = ProcessInfo.processInfo.environment
        if let token { return (token, false) }
        if let tokenFile { return (try SecretFile.read(tokenFile, what: "a token"), false) }
        if let token = environment["CHORDSTORE_TOKEN"], !token.isEmpty { return (token, false) }
        if let file = environment["CHORDSTORE_TOKEN_FILE"], !file.isEmpty { return (try SecretFile.read(file, what: "a token"), false) }
        guard let addresses = try? serverAddresses(server),
              addresses.allSatisfy({ (try? serverAddress($0)).map { HostAddress.isLoopback($0.host) } ?? false }) else { return (nil, false) }
        let directory = URL(fileURLWithPath: dataDirectory)
        let local = directory.appendingPathComponent("admin.token").path
        guard FileManager.default.isReadableFile(atPath: local), Self.isServed(directory),
              let token = try? SecretFile.read(local, what: "a token") else { return (nil, false) }
        return (token, true)
    }

    /// Whether a process holds the lock of the data directory `directory` (a server runs on it).
    private static func isServed(_ directory: URL) -> Bool {
        let fd = open(directory.appendingPathComponent("chordstore.lock").path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return false
        }
        return errno == EWOULDBLOCK
    }

    /// The data directory for verbs that always work on one (`--data`, or the default).
    var dataDirectory: String { data ?? ProcessInfo.processInfo.environment["CHORDSTORE_DATA"] ?? "chordstore-data" }

    /// Whether `--server` is on the command line: the option has a default (and
    /// `$CHORDSTORE_SERVER`), so its value cannot tell.
    static var serverGiven: Bool {
        CommandLine.arguments.dropFirst().contains { $0 == "--server" || $0.hasPrefix("--server=") }
    }

    /// Refuses `--server` without `--data` for `verb`, which works on a data directory
    /// alone: it would otherwise check or rebuild the default directory, not the server's.
    func refuseServer(for verb: String) throws {
        guard Self.serverGiven, data == nil else { return }
        throw ValidationError(
            "\(verb) works on a data directory with its server stopped (--data DIR; default \(dataDirectory)), not through a server: it takes no --server")
    }

    /// Fails unless ``dataDirectory`` holds a log: a mistyped `--data` would otherwise
    /// make an empty store there, and the verb would pass on it. `toDo`: what the
    /// refusal ends with ("nothing to verify").
    func requireDataDirectory(toDo: String = Self.nothingToRead) throws(Failure) {
        guard FileManager.default.fileExists(atPath: URL(fileURLWithPath: dataDirectory).appendingPathComponent("data.mdb").path) else {
            throw Failure(ChordStoreError(.notFound, "\(dataDirectory) is not a data directory (it has no data.mdb): \(toDo)"))
        }
    }

    /// How a verb that only reads ends its refusal of a directory without a log.
    static let nothingToRead = "nothing to read (a verb that writes makes one)"

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

extension GlobalOptions {
    /// How long a verb's call to a lone server waits before health checks of that
    /// server start (``Client/RetryPolicy/loneServerLiveness``): a server that stops
    /// answering (a frozen process) fails the verb rather than keep it waiting for ever.
    static let loneServerLiveness: Duration = .seconds(5)

    /// A client of `--server` showing the credentials; a bad address or credential is a
    /// ``Failure``.
    func client(store: String = "", retry: Client.RetryPolicy = Client.RetryPolicy()) throws -> Client {
        var retry = retry
        retry.loneServerLiveness = Self.loneServerLiveness
        do throws(ChordStoreError) {
            guard let client = Client(servers: try serverAddresses(server), retry: retry, store: store, credentials: try credentials()) else {
                throw ChordStoreError(.invalidArgument, "--server takes HOST:PORT[,HOST:PORT...], not '\(server)'")
            }
            return client
        } catch {
            throw Failure(error)
        }
    }
}

/// One unary call to `--server` (within 30 s); a refusal is a ``Failure``.
func serverCall<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
    _ global: GlobalOptions, _ method: ChordStoreAPI.Method, _ request: Request, retry: Client.RetryPolicy,
    as: Response.Type = Response.self
) async throws -> Response {
    let client = try global.client(retry: retry)
    defer { Task { await client.close() } }
    do {
        return try await client.call(method, request, timeout: .seconds(30), as: Response.self)
    } catch {
        throw Failure(ChordStoreError(error.code, error.message, reason: error.reason))
    }
}

/// Runs `body` with an open store in the data directory, closing it afterwards, and
/// prints a refusal as `CODE: message` with exit status 1. `stoppedServerOnly`: the verb
/// has no `--server` form, so a directory another process holds is refused with advice
/// to stop it, not to send the verb to its server. `liveState`: open it as `serve
/// --live-state` does (``ChordStore/Options/liveState``).
func withStore<T>(
    _ global: GlobalOptions, stoppedServerOnly verb: String? = nil, liveState: Bool = false, _ body: (ChordStore) async throws -> T
) async throws -> T {
    let store: ChordStore
    do {
        var options = ChordStore.Options()
        options.liveState = liveState
        if let verb {
            let path = URL(fileURLWithPath: global.dataDirectory).path
            options.directoryInUse = { owner in
                "data directory \(path) is in use by another process\(owner.map { " (pid \($0))" } ?? ""); "
                    + "stop it first: \(verb) works on a data directory no server has open"
            }
        }
        store = try global.openStore(options: options)
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
/// given, on `store` (default: `--store`'s); refusals print as `CODE: message` with exit
/// status 1. A verb that only reads (`readOnly`) is refused on a `--data` that holds no
/// log, rather than make an empty store there (a mistyped path would list nothing).
func withAccess<T>(
    _ global: GlobalOptions, store: String? = nil, readOnly: Bool = false, _ body: (any StoreAccess) async throws -> T
) async throws -> T {
    let access: any StoreAccess
    let name = store ?? global.storeName
    if readOnly, global.data != nil { try global.requireDataDirectory() }
    do {
        if global.data != nil {
            access = LocalAccess(store: try global.openStore(), name: name)
        } else {
            access = try ClientAccess(global.server, store: name, credentials: try global.credentials())
        }
    } catch {
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
    var description: String {
        switch error.reason {
        case .tokenWithheld:
            return "\(error.code): \(error.message)\n"
                + "The CLI found this machine's admin token in DATA/admin.token, and shows it only to the loopback server it was found for, "
                + "never to another machine. To follow the leader there, give --token-file FILE or set CHORDSTORE_TOKEN (a token made with "
                + "`chordstore token create`, which works on every member)."
        case .tokenRequired:
            return "\(error.code): \(error.message)\n"
            + "The CLI found no token: give --token-file FILE, or set CHORDSTORE_TOKEN. A server keeps its own admin token in "
            + "DATA/admin.token, which the CLI reads by itself when --server is a loopback address and DATA is $CHORDSTORE_DATA or ./chordstore-data."
        default:
            return "\(error.code): \(error.message)"
        }
    }
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
