import ChordStoreRecords
import ChordStoreAPI
@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreWire
import Foundation
import SwiftProtobuf

/// What the verbs need from a store, whether opened directly (`--data`) or reached
/// through a server (`--server`, the default).
protocol StoreAccess: Sendable {
    func execute(_ command: Command, context: CommandContext) async throws -> RecordedEvent
    func chordset(_ id: UUID) async throws -> Chordset?
    func chord(_ id: UUID) async throws -> (chord: Chord, chordsetID: UUID?)?
    func controlsChord() async throws -> Chord?
    func profile() async throws -> Profile
    /// Calls `body` with each event envelope from `sequence` on (all when `limit` is 0).
    func events(from sequence: UInt64, limit: Int, _ body: @Sendable (Chordstore_V1_EventEnvelope) throws -> Void) async throws
    func sessionState(_ session: String) async throws -> SessionState
    /// One page of a chordset's history (`chordset` given) or a session's.
    func history(chordset: UUID?, session: String, after: UInt64, limit: Int) async throws -> [RecordedEvent]
    /// The chordsets, one chordset or the profile as of a point in the past (`read` picks).
    func readAsOf(_ point: AsOf, _ read: PastRead) async throws -> PastAnswer
    func query(_ query: ChordsetQuery) async throws -> QueryPage
    func count(_ query: ChordsetQuery) async throws -> Int
    /// The stores of the server or directory.
    func createStore(_ name: String) async throws -> StoreInfo
    func deleteStore(_ name: String) async throws -> UInt64
    func stores(after name: String?, limit: Int) async throws -> (stores: [StoreInfo], next: String?)
    func storeInfo(_ name: String) async throws -> StoreInfo
    /// Appends exported events to the store (`ImportEvents`); returns its last sequence.
    func importEvents(_ events: [Chordstore_V1_EventEnvelope]) async throws -> UInt64
    func close() async
}

/// What a read of the past asks for.
enum PastRead: Sendable {
    case list(ChordsetOrder, limit: Int?)
    case chordset(UUID)
    case profile
}

/// What a read of the past answers, and the point it was read at.
enum PastAnswer: Sendable {
    case list([Chordset], sequence: UInt64)
    case chordset(Chordset?, sequence: UInt64)
    case profile(Profile)
}

/// A store opened in this process.
struct LocalAccess: StoreAccess {
    let store: ChordStore
    /// The store worked on.
    let name: String

    func execute(_ command: Command, context: CommandContext) async throws -> RecordedEvent {
        try await store.execute(command, context: context)
    }
    func chordset(_ id: UUID) async throws -> Chordset? { try store.chordset(id, store: name) }
    func chord(_ id: UUID) async throws -> (chord: Chord, chordsetID: UUID?)? { try store.chord(id, store: name) }
    func controlsChord() async throws -> Chord? { try store.controlsChord(store: name) }
    func profile() async throws -> Profile { try store.profile(store: name) }

    func events(from sequence: UInt64, limit: Int, _ body: @Sendable (Chordstore_V1_EventEnvelope) throws -> Void) async throws {
        var printed = 0
        try store.forEachRecord(from: sequence, store: name) { sequence, record in
            try body(try RecordCodec.envelope(record, sequence: sequence))
            printed += 1
            return limit == 0 || printed < limit
        }
    }

    func sessionState(_ session: String) async throws -> SessionState { try store.session(session, store: name) }

    func history(chordset: UUID?, session: String, after: UInt64, limit: Int) async throws -> [RecordedEvent] {
        if let chordset { return try store.history(chordset: chordset, after: after, limit: limit, store: name) }
        return try store.history(session: session, after: after, limit: limit, store: name)
    }

    func readAsOf(_ point: AsOf, _ read: PastRead) async throws -> PastAnswer {
        let past = try store.state(asOf: point, store: name)
        switch read {
        case .list(let order, let limit): return .list(past.chordsets(order: order, limit: limit), sequence: past.sequence)
        case .chordset(let id): return .chordset(past.chordset(id), sequence: past.sequence)
        case .profile: return .profile(past.profile)
        }
    }

    func query(_ query: ChordsetQuery) async throws -> QueryPage { try store.query(query, store: name) }
    func count(_ query: ChordsetQuery) async throws -> Int { try store.count(query, store: name).count }

    func createStore(_ name: String) async throws -> StoreInfo { try await store.createStore(name) }
    func deleteStore(_ name: String) async throws -> UInt64 { try await store.deleteStore(name).logSequence }
    func stores(after name: String?, limit: Int) async throws -> (stores: [StoreInfo], next: String?) {
        let page = try store.stores(after: name, limit: limit + 1)
        return (Array(page.prefix(limit)), page.count > limit ? page[limit - 1].name : nil)
    }
    func storeInfo(_ name: String) async throws -> StoreInfo { try store.storeInfo(name) }

    func importEvents(_ events: [Chordstore_V1_EventEnvelope]) async throws -> UInt64 {
        var recorded: [RecordedEvent] = []
        recorded.reserveCapacity(events.count)
        for envelope in events { recorded.append(try RecordedEvent(envelope: envelope)) }
        return try await store.importEvents(recorded, store: name).sequence
    }

    func close() async { store.close() }
}

/// A store reached through a server, or the members of a cluster (`--server a,b,c`),
/// through the client library's domain API: writes sent to a follower go to its leader,
/// and through a failover to the new one.
struct ClientAccess: StoreAccess {
    let client: Client

    /// A client of `servers` (`HOST:PORT[,HOST:PORT...]`) working on `store`.
    init(_ servers: String, store: String, credentials: ClientCredentials) throws(ChordStoreError) {
        var retry = Client.RetryPolicy()
        retry.loneServerLiveness = GlobalOptions.loneServerLiveness
        guard let client = Client(servers: try serverAddresses(servers), retry: retry, store: store, credentials: credentials) else {
            throw ChordStoreError(.invalidArgument, "--server takes HOST:PORT[,HOST:PORT...], not '\(servers)'")
        }
        self.client = client
    }

    func execute(_ command: Command, context: CommandContext) async throws -> RecordedEvent {
        try await remote {
            try await client.execute(command, options: WriteOptions(
                session: context.session, commandID: context.commandID.isEmpty ? nil : context.commandID,
                expectedRevision: context.expectedRevision))
        }
    }

    func chordset(_ id: UUID) async throws -> Chordset? { try await remote { try await client.chordset(id, minSequence: 0) } }

    func chord(_ id: UUID) async throws -> (chord: Chord, chordsetID: UUID?)? { try await remote { try await client.chord(id, minSequence: 0) } }

    func controlsChord() async throws -> Chord? { try await remote { try await client.controlsChord(minSequence: 0) } }

    func profile() async throws -> Profile { try await remote { try await client.profile(minSequence: 0) } }

    func events(from sequence: UInt64, limit: Int, _ body: @Sendable (Chordstore_V1_EventEnvelope) throws -> Void) async throws {
        try await remote {
            // The log as it is stored, for --json: the raw stream of envelopes.
            let stream = try await client.stream(.readLog, Chordstore_V1_ReadLogRequest.with {
                $0.fromSequence = sequence
                $0.limit = UInt64(limit)
            }, as: Chordstore_V1_EventEnvelope.self)
            for try await envelope in stream { try body(envelope) }
        }
    }

    func sessionState(_ session: String) async throws -> SessionState { try await remote { try await client.session(session) } }

    func history(chordset: UUID?, session: String, after: UInt64, limit: Int) async throws -> [RecordedEvent] {
        try await remote {
            if let chordset { return try await client.history(ofChordset: chordset, after: after, limit: limit) }
            return try await client.history(ofSession: session, after: after, limit: limit)
        }
    }

    func readAsOf(_ point: AsOf, _ read: PastRead) async throws -> PastAnswer {
        try await remote {
            switch read {
            case .list(let order, let limit):
                let (chordsets, sequence) = try await client.chordsets(asOf: point, order: order, limit: limit)
                return .list(chordsets, sequence: sequence)
            case .chordset(let id):
                let (chordset, sequence) = try await client.chordset(id, asOf: point)
                return .chordset(chordset, sequence: sequence)
            case .profile:
                return .profile(try await client.profile(asOf: point))
            }
        }
    }

    func query(_ query: ChordsetQuery) async throws -> QueryPage { try await remote { try await client.chordsets(query, minSequence: 0) } }

    func count(_ query: ChordsetQuery) async throws -> Int { try await remote { try await client.count(query, minSequence: 0) } }

    func createStore(_ name: String) async throws -> StoreInfo { try await remote { try await client.createStore(name) } }

    func deleteStore(_ name: String) async throws -> UInt64 { try await remote { try await client.deleteStore(name) } }

    func stores(after name: String?, limit: Int) async throws -> (stores: [StoreInfo], next: String?) {
        try await remote { try await client.stores(after: name, limit: limit) }
    }

    func storeInfo(_ name: String) async throws -> StoreInfo { try await remote { try await client.storeInfo(name) } }

    func importEvents(_ events: [Chordstore_V1_EventEnvelope]) async throws -> UInt64 {
        try await remote {
            var recorded: [RecordedEvent] = []
            recorded.reserveCapacity(events.count)
            for envelope in events { recorded.append(try RecordedEvent(envelope: envelope)) }
            return try await client.importEvents(recorded)
        }
    }

    func close() async { await client.close() }

    /// Runs a call, turning the client's error into the store's error type for printing.
    private func remote<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ClientError {
            if error.reason == .cannotConnect {
                throw ChordStoreError(
                    .unavailable,
                    "no server answers at \(client.knownServers.joined(separator: ",")); start one with 'chordstore serve', or give --data DIR to open a data directory directly",
                    reason: .cannotConnect)
            }
            throw ChordStoreError(error.code, error.message, reason: error.reason, currentRevision: error.currentRevision)
        }
    }
}

/// The addresses of a `--server` value: one `HOST:PORT`, or several, comma-separated.
func serverAddresses(_ text: String) throws(ChordStoreError) -> [String] {
    let addresses = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
    for address in addresses { _ = try serverAddress(address) }
    return addresses
}

/// Splits one `--server` address into its host and port: `HOST:PORT`, or
/// `[IPV6]:PORT` (the host comes back without its brackets).
func serverAddress(_ address: String) throws(ChordStoreError) -> (host: String, port: Int) {
    let refusal = ChordStoreError(.invalidArgument, "--server takes HOST:PORT or [IPV6]:PORT, not '\(address)'")
    let host: Substring, portText: Substring
    if address.hasPrefix("[") {
        guard let close = address.firstIndex(of: "]"), address[address.index(after: close)...].hasPrefix(":") else { throw refusal }
        host = address[address.index(after: address.startIndex)..<close]
        portText = address[address.index(close, offsetBy: 2)...]
        guard host.contains(":") else { throw refusal }
    } else {
        let parts = address.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw refusal }
        (host, portText) = (parts[0], parts[1])
    }
    guard let port = Int(portText), (1...65_535).contains(port), !host.isEmpty else { throw refusal }
    return (String(host), port)
}
