import ChordStoreAPI
import ChordStoreClient
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
    func chordsets(order: ChordsetOrder, limit: Int?) async throws -> [Chordset]
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
    func chordsets(order: ChordsetOrder, limit: Int?) async throws -> [Chordset] { try store.chordsets(order: order, limit: limit, store: name) }
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

/// A store reached through a server, or the members of a cluster (`--server a,b,c`):
/// writes sent to a follower go to its leader, and through a failover to the new one.
struct RemoteAccess: StoreAccess {
    let client: Client
    let servers: String

    static func connect(_ servers: String, store: String, credentials: ClientCredentials) async throws -> RemoteAccess {
        guard let client = Client(servers: try serverAddresses(servers), store: store, credentials: credentials) else {
            throw ChordStoreError(.invalidArgument, "--server takes HOST:PORT[,HOST:PORT...], not '\(servers)'")
        }
        return RemoteAccess(client: client, servers: servers)
    }

    func execute(_ command: Command, context: CommandContext) async throws -> RecordedEvent {
        let reply: Chordstore_V1_CommandReply = try await remote {
            let (method, request) = RemoteCommand.request(command, context: context)
            return try await client.call(method, request)
        }
        return try RecordedEvent(envelope: reply.event)
    }

    func chordsets(order: ChordsetOrder, limit: Int?) async throws -> [Chordset] {
        let list: Chordstore_V1_ChordsetList = try await remote {
            try await client.call(.listChordsets, Chordstore_V1_ListChordsetsRequest.with {
                $0.order = order.proto
                $0.limit = UInt32(clamping: limit ?? 0)
            })
        }
        var result: [Chordset] = []
        for chordset in list.chordsets { result.append(try Chordset(proto: chordset)) }
        return result
    }

    func chordset(_ id: UUID) async throws -> Chordset? {
        guard let message: Chordstore_V1_Chordset = try await optional({
            try await client.call(.getChordset, Chordstore_V1_GetChordsetRequest.with { $0.chordsetID = id.protoBytes })
        }) else { return nil }
        return try Chordset(proto: message)
    }

    func chord(_ id: UUID) async throws -> (chord: Chord, chordsetID: UUID?)? {
        guard let view: Chordstore_V1_ChordView = try await optional({
            try await client.call(.getChord, Chordstore_V1_GetChordRequest.with { $0.chordID = id.protoBytes })
        }) else { return nil }
        return (try Chord(proto: view.chord), view.chordsetID.isEmpty ? nil : try UUID(protoBytes: view.chordsetID))
    }

    func controlsChord() async throws -> Chord? {
        guard let chord: Chordstore_V1_Chord = try await optional({
            try await client.call(.getControlsChord, Chordstore_V1_GetControlsChordRequest())
        }) else { return nil }
        return try Chord(proto: chord)
    }

    func profile() async throws -> Profile {
        let profile: Chordstore_V1_Profile = try await remote {
            try await client.call(.getProfile, Chordstore_V1_GetProfileRequest())
        }
        return Profile(proto: profile)
    }

    func events(from sequence: UInt64, limit: Int, _ body: @Sendable (Chordstore_V1_EventEnvelope) throws -> Void) async throws {
        try await remote {
            let stream = try await client.stream(.readLog, Chordstore_V1_ReadLogRequest.with {
                $0.fromSequence = sequence
                $0.limit = UInt64(limit)
            }, as: Chordstore_V1_EventEnvelope.self)
            for try await envelope in stream { try body(envelope) }
        }
    }

    func sessionState(_ session: String) async throws -> SessionState {
        let state: Chordstore_V1_SessionState = try await remote {
            try await client.call(.getSession, Chordstore_V1_GetSessionRequest.with { $0.session = session })
        }
        return SessionState(proto: state)
    }

    func history(chordset: UUID?, session: String, after: UInt64, limit: Int) async throws -> [RecordedEvent] {
        var events: [RecordedEvent] = []
        var next = after
        while events.count < limit {
            let page: Chordstore_V1_HistoryPage = try await remote {
                try await client.call(.getHistory, Chordstore_V1_GetHistoryRequest.with {
                    if let chordset { $0.chordsetID = chordset.protoBytes } else { $0.session = session }
                    $0.afterSequence = next
                    $0.limit = UInt32(clamping: limit - events.count)
                })
            }
            for envelope in page.events { events.append(try RecordedEvent(envelope: envelope)) }
            guard page.nextAfter != 0 else { break }
            next = page.nextAfter
        }
        return events
    }

    func readAsOf(_ point: AsOf, _ read: PastRead) async throws -> PastAnswer {
        let reply: Chordstore_V1_AsOfReply = try await remote {
            try await client.call(.readAsOf, Chordstore_V1_ReadAsOfRequest.with {
                switch point {
                case .sequence(let sequence): $0.asOf.sequence = sequence
                case .time(let instant): $0.asOf.timeMicros = instant.microsecondsSince1970
                }
                switch read {
                case .list(let order, let limit):
                    $0.list = .with {
                        $0.order = order.proto
                        $0.limit = UInt32(clamping: limit ?? 0)
                    }
                case .chordset(let id): $0.chordset = .with { $0.chordsetID = id.protoBytes }
                case .profile: $0.profile = Chordstore_V1_GetProfileRequest()
                }
            })
        }
        switch reply.result {
        case .list(let list): return .list(try list.chordsets.map { try Chordset(proto: $0) }, sequence: reply.sequence)
        case .chordset(let chordset): return .chordset(try Chordset(proto: chordset), sequence: reply.sequence)
        case .profile(let p):
            return .profile(Profile(proto: p))
        case nil: throw ChordStoreError(.internal, "the server answered ReadAsOf without a result")
        }
    }

    func query(_ query: ChordsetQuery) async throws -> QueryPage {
        let page: Chordstore_V1_QueryPage = try await remote {
            try await client.call(.queryChordsets, query.proto)
        }
        return QueryPage(
            chordsets: try page.chordsets.map { try Chordset(proto: $0) },
            nextCursor: page.nextCursor.isEmpty ? nil : Array(page.nextCursor), sequence: page.sequence)
    }

    func count(_ query: ChordsetQuery) async throws -> Int {
        let reply: Chordstore_V1_CountReply = try await remote { try await client.call(.countChordsets, query.proto) }
        return Int(reply.count)
    }

    func createStore(_ name: String) async throws -> StoreInfo {
        let info: Chordstore_V1_StoreInfo = try await remote {
            try await client.call(.createStore, Chordstore_V1_CreateStoreRequest.with { $0.name = name })
        }
        return StoreInfo(proto: info)
    }

    func deleteStore(_ name: String) async throws -> UInt64 {
        let reply: Chordstore_V1_DeleteStoreReply = try await remote {
            try await client.call(.deleteStore, Chordstore_V1_DeleteStoreRequest.with { $0.name = name })
        }
        return reply.logSequence
    }

    func stores(after name: String?, limit: Int) async throws -> (stores: [StoreInfo], next: String?) {
        let list: Chordstore_V1_StoreList = try await remote {
            try await client.call(.listStores, Chordstore_V1_ListStoresRequest.with {
                $0.pageSize = UInt32(clamping: limit)
                $0.pageToken = name ?? ""
            })
        }
        return (list.stores.map(StoreInfo.init(proto:)), list.nextPageToken.isEmpty ? nil : list.nextPageToken)
    }

    func storeInfo(_ name: String) async throws -> StoreInfo {
        let info: Chordstore_V1_StoreInfo = try await remote {
            try await client.call(.getStoreInfo, Chordstore_V1_GetStoreInfoRequest.with { $0.name = name })
        }
        return StoreInfo(proto: info)
    }

    func close() async { await client.close() }

    func importEvents(_ events: [Chordstore_V1_EventEnvelope]) async throws -> UInt64 {
        let reply: Chordstore_V1_ImportEventsReply = try await remote {
            try await client.call(.importEvents, Chordstore_V1_ImportEventsRequest.with { $0.events = events }, timeout: .seconds(60))
        }
        return reply.lastSequence
    }

    /// Runs a call, turning the client's error into the store's error type for printing.
    private func remote<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ClientError {
            if error.reason == .cannotConnect {
                throw ChordStoreError(
                    .unavailable,
                    "no server answers at \(servers); start one with 'chordstore serve', or give --data DIR to open a data directory directly",
                    reason: .cannotConnect)
            }
            throw ChordStoreError(error.code, error.message, reason: error.reason, currentRevision: error.currentRevision)
        }
    }

    /// Like ``remote(_:)``, with NOT_FOUND as `nil`.
    private func optional<T>(_ body: () async throws -> T) async throws -> T? {
        do {
            return try await remote(body)
        } catch let error as ChordStoreError where error.code == .notFound {
            return nil
        }
    }
}

/// The request message of each command.
enum RemoteCommand {
    static func request(_ command: Command, context: CommandContext) -> (Method, any SwiftProtobuf.Message) {
        let wireContext = Chordstore_V1_CommandContext.with {
            $0.session = context.session
            $0.commandID = context.commandID
            if let expected = context.expectedRevision { $0.expected = .with { $0.revision = expected } }
        }
        return (Method(command: command), CommandMessages.request(for: command, context: wireContext))
    }
}

/// The addresses of a `--server` value: one `HOST:PORT`, or several, comma-separated.
func serverAddresses(_ text: String) throws(ChordStoreError) -> [String] {
    let addresses = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
    for address in addresses { _ = try serverAddress(address) }
    return addresses
}

/// Splits one `--server` address into its host and port.
func serverAddress(_ address: String) throws(ChordStoreError) -> (host: String, port: Int) {
    let parts = address.split(separator: ":", omittingEmptySubsequences: false)
    guard parts.count == 2, let port = Int(parts[1]), (1...65_535).contains(port), !parts[0].isEmpty else {
        throw ChordStoreError(.invalidArgument, "--server takes HOST:PORT, not '\(address)'")
    }
    return (String(parts[0]), port)
}
