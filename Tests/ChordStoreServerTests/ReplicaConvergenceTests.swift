@_spi(Raw) import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreReplica
import ChordStoreServer
import ChordStoreWire
import Foundation
import Testing

/// The device replica's convergence property (docs/DEVICES.md): three replicas (and the
/// copies made of them) and a server with tokens, random interleavings of local writes
/// (every command, undo and redo included), offline and online switches, replica
/// reopens from disk (an app restart, from the saved view; one in four after a random
/// bit of the copy of the events or of the saved view flipped), directories copied (a
/// device restored from a backup: a new session with the same queue), syncs with a
/// wrong token (read-only, another store's, revoked: refused as `accessRevoked`, the
/// queue kept), the device token revoked and replaced, and server restarts. At the end,
/// after every replica synced twice, every replica equals the server's store, every
/// write the server confirmed is in its log once, and every write made was either
/// confirmed or refused.
///
/// `CHORDSTORE_REPLICA_SCHEDULES` sets the number of schedules (200 by default; the
/// longer run recorded in docs/DEVICES.md used more).
@Suite("Device replicas converge", .serialized)
struct ReplicaConvergenceTests {
    static let schedules = ProcessInfo.processInfo.environment["CHORDSTORE_REPLICA_SCHEDULES"].flatMap(Int.init) ?? 200
    static let steps = 30
    static let devices = 3
    /// Most replicas in a schedule, copies included.
    static let maxDevices = 5

    /// Every device saves its view, however short its copy (the default waits for 4,096
    /// events), so that reopens read saved views.
    static var options: Replica.Options {
        var options = Replica.Options()
        options.checkpointMinimum = 1
        return options
    }

    /// A durable server that can be stopped and started again on the same directory.
    final class RestartableServer: @unchecked Sendable {
        let directory: URL
        var server: TestServer?

        init() async throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("replica-convergence-\(UUID().uuidString)")
            try await start()
        }

        func start() async throws {
            var options = ChordStore.Options()
            options.unsafeNoSync = true  // restarts here are clean shutdowns; crashes are the kill test's
            // The clients live in this process, on the pool a full suite keeps busy: one
            // starved for 10 s between its connect and its first frame was sent away, and
            // one whose first call came 10 s after its connect too (unauthenticated). Those
            // bounds are ServerLimitTests' and HoardingTests', not this test's.
            var limits = WireLimits()
            limits.handshakeTimeout = .seconds(120)
            limits.unauthenticatedTimeout = .seconds(120)
            server = try await TestServer.start(
                store: try ChordStore.open(at: directory, options: options), limits: limits, security: SecurityTests.secured)
        }

        func stop() async {
            await server?.stop()
            server = nil
        }

        func client(store: String, token: String) -> Client? {
            server.map { Client(host: "127.0.0.1", port: $0.port, retry: .once, store: store, credentials: ClientCredentials(token: token)) }
        }

        var admin: Client? { client(store: "", token: SecurityTests.adminSecret) }

        /// A token's secret and id for `store`.
        func token(_ store: String, _ role: Chordstore_V1_TokenRole) async throws -> (secret: String, id: String) {
            let admin = try #require(admin)
            defer { Task { await admin.close() } }
            let created: Chordstore_V1_CreatedToken = try await admin.call(.createToken, Chordstore_V1_CreateTokenRequest.with {
                $0.role = role
                $0.store = store
            })
            return (created.secret, created.token.tokenID)
        }

        func revoke(_ id: String) async throws {
            let admin = try #require(admin)
            defer { Task { await admin.close() } }
            let _: Chordstore_V1_RevokeTokenReply = try await admin.call(.revokeToken, Chordstore_V1_RevokeTokenRequest.with { $0.tokenID = id })
        }

        deinit { try? FileManager.default.removeItem(at: directory) }
    }

    struct Device {
        var directory: URL
        var replica: Replica?
        var online = true
    }

    @Test("random schedules of writes, offline spells, app and server restarts end with every replica equal to the server")
    func convergence() async throws {
        var host = try await RestartableServer()
        var totals = (writes: 0, confirmed: 0, rejected: 0, restarts: 0, copies: 0, refusedTokens: 0)
        for schedule in 0..<Self.schedules {
            if schedule > 0, schedule % 50 == 0 {  // a fresh server now and then keeps each log small
                await host.stop()
                host = try await RestartableServer()
            }
            let outcome = try await run(schedule: UInt64(schedule), host)
            totals.writes += outcome.writes
            totals.confirmed += outcome.confirmed
            totals.rejected += outcome.rejected
            totals.restarts += outcome.restarts
            totals.copies += outcome.copies
            totals.refusedTokens += outcome.refusedTokens
        }
        await host.stop()
        print("replica convergence: \(Self.schedules) schedules, \(totals.writes) local writes, \(totals.confirmed) confirmed, \(totals.rejected) refused, \(totals.restarts) server restarts, \(totals.copies) directories copied, \(totals.refusedTokens) syncs refused their token")
        #expect(totals.confirmed > totals.rejected)
    }

    func run(
        schedule: UInt64, _ host: RestartableServer
    ) async throws -> (writes: Int, confirmed: Int, rejected: Int, restarts: Int, copies: Int, refusedTokens: Int) {
        var random = SplitMix64(seed: schedule &* 0x9E37_79B9 &+ 17)
        let store = "s\(schedule)"
        _ = try await host.server!.store.createStore(store)
        _ = try await host.server!.store.createStore("o\(schedule)")
        var token = try await host.token(store, .readWrite)
        // Tokens that may not write this store; a read-only one may still read it.
        var wrongTokens = [
            (secret: try await host.token(store, .readOnly).secret, reads: true),
            (secret: try await host.token("o\(schedule)", .readWrite).secret, reads: false),
        ]
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("replica-schedule-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        var devices: [Device] = []
        for index in 0..<Self.devices {
            let directory = root.appendingPathComponent("device\(index)")
            devices.append(Device(directory: directory, replica: try await Replica.open(at: directory, store: store, options: Self.options)))
        }
        var made: Set<String> = []
        var confirmed: [String: UInt64] = [:]
        var restarts = 0
        var copies = 0
        /// Writes queued in two directories (the original's and a copy's): each sends it,
        /// and the server decides it each time (recorded once; refused from one directory,
        /// it may be recorded from the other once the store changed).
        var inherited: Set<String> = []
        var refusedTokens = 0

        func sync(_ device: inout Device) async throws {
            guard let replica = device.replica else { return }
            guard let client = host.client(store: store, token: token.secret) else {
                // The server is down: a sync says so and loses nothing.
                let before = replica.pendingWrites.map(\.commandID)
                let down = Client(host: "127.0.0.1", port: 1, retry: .once, store: store, credentials: ClientCredentials(token: token.secret))
                let error = await #expect(throws: ReplicaError.self) { _ = try await replica.sync(with: down, timeout: .seconds(5)) }
                #expect(error?.code == .offline)
                #expect(replica.pendingWrites.map(\.commandID) == before)
                return
            }
            defer { Task { await client.close() } }
            let report = try await replica.sync(with: client)
            for (commandID, sequence) in report.confirmed { confirmed[commandID] = sequence }
        }

        for _ in 0..<Self.steps {
            let index = Int(random.next() % UInt64(devices.count))
            let roll = random.next() % 100
            switch roll {
            case 0..<50:
                guard let replica = devices[index].replica else { break }
                if let write = try? replica.perform(Self.randomCommand(replica, &random)) { made.insert(write.commandID) }
            case 50..<72:
                if devices[index].online { try await sync(&devices[index]) }
            case 72..<78:
                devices[index].online.toggle()
            case 78..<85:
                devices[index].replica?.close()
                if random.next() % 4 == 0 {
                    // A bit of the copy of the events, or of the saved view, flipped on the
                    // device's disk while the app was away: found (copied again, or the
                    // view folded), the queue untouched.
                    let name = random.next() % 2 == 0 ? "events.sqlite" : "view.checkpoint"
                    let file = devices[index].directory.appendingPathComponent(name)
                    if let size = try? Data(contentsOf: file).count, size > 0 {
                        try ReplicaFiles.flip(file, at: Int(random.next() % UInt64(size)), bit: Int(random.next() % 8))
                    }
                }
                devices[index].replica = try await Replica.open(at: devices[index].directory, options: Self.options)
            case 85..<88:
                // The directory copied while the app is away (a device restored from a
                // backup): the copy starts a session of its own, with the same queue.
                guard devices.count < Self.maxDevices else { break }
                inherited.formUnion(devices[index].replica?.pendingWrites.map(\.commandID) ?? [])
                devices[index].replica?.close()
                let copy = root.appendingPathComponent("device\(devices.count)")
                try FileManager.default.copyItem(at: devices[index].directory, to: copy)
                devices[index].replica = try await Replica.open(at: devices[index].directory, options: Self.options)
                let replica = try await Replica.open(at: copy, options: Self.options)
                #expect(replica.session != devices[index].replica?.session, "schedule \(schedule): a copy starts a session of its own")
                devices.append(Device(directory: copy, replica: replica, online: devices[index].online))
                copies += 1
            case 88..<93:
                // A sync with a token that may not write this store: refused, the queue
                // kept (a read-only token with nothing to send only copies).
                guard let replica = devices[index].replica, host.server != nil else { break }
                let wrong = wrongTokens[Int(random.next() % UInt64(wrongTokens.count))]
                let client = try #require(host.client(store: store, token: wrong.secret))
                defer { Task { await client.close() } }
                let before = replica.pendingWrites.map(\.commandID)
                if wrong.reads && before.isEmpty {
                    _ = try await replica.sync(with: client)
                    break
                }
                let refused = await #expect(throws: ReplicaError.self) { _ = try await replica.sync(with: client) }
                #expect(refused?.code == .accessRevoked, "schedule \(schedule): \(String(describing: refused))")
                #expect(replica.pendingWrites.map(\.commandID) == before, "schedule \(schedule): the queue is kept")
                refusedTokens += 1
            case 93..<95:
                // The devices' token revoked and a new one given.
                guard host.server != nil else { break }
                try await host.revoke(token.id)
                wrongTokens.append((token.secret, false))
                token = try await host.token(store, .readWrite)
            default:
                if host.server == nil {
                    try await host.start()
                } else {
                    await host.stop()
                    restarts += 1
                }
            }
        }
        if host.server == nil { try await host.start() }
        // A damaged event under a saved view is found by a check of the copy (opening
        // from the view does not read it): dropped, and copied again by the syncs below.
        for device in devices { _ = try device.replica?.verifyCopy() }
        for round in 0..<2 {
            for index in devices.indices {
                devices[index].online = true
                try await sync(&devices[index])
                if round == 1 { #expect(devices[index].replica?.pendingWrites.isEmpty == true) }
            }
        }

        // Every replica equals the server's store.
        let server = host.server!.store
        let expected = try server.chordsets(order: .index, store: store)
        let controls = try server.controlsChord(store: store)
        var rejected: Set<String> = []
        var reasons: [String: String] = [:]
        for device in devices {
            let replica = try #require(device.replica)
            #expect(try replica.chordsets(ChordsetQuery(order: .index, limit: 5_000)).chordsets == expected, "schedule \(schedule)")
            #expect(try replica.verifyCopy() == nil, "schedule \(schedule): the view is the fold of the copied events")
            #expect(replica.controlsChord() == controls, "schedule \(schedule)")
            #expect(replica.lastSequence == (try server.profile(store: store).lastSequence))
            for rejection in try replica.rejectedWrites(limit: 1_000) {
                rejected.insert(rejection.write.commandID)
                reasons[rejection.write.commandID] = "\(rejection.write.command.kindName) under \(rejection.write.session ?? "?") on \(replica.session): \(rejection.code) \(rejection.message)"
            }
            replica.close()
        }
        // Every confirmed write is in the log once, at the sequence the server gave; every
        // write made was confirmed or refused.
        let log = try server.events(limit: 1_000_000, store: store)
        var seen: [String: UInt64] = [:]
        for event in log where !event.commandID.isEmpty {
            #expect(seen[event.commandID] == nil, "command \(event.commandID) is in the log twice")
            seen[event.commandID] = event.sequence
        }
        for (commandID, sequence) in confirmed { #expect(seen[commandID] == sequence, "schedule \(schedule)") }
        let recorded = Set(seen.keys)
        #expect(made.subtracting(recorded).subtracting(rejected).isEmpty, "schedule \(schedule): a write was neither recorded nor refused")
        #expect(recorded.intersection(rejected).subtracting(inherited).isEmpty, "schedule \(schedule): \(recorded.intersection(rejected).map { reasons[$0] ?? $0 })")
        return (made.count, made.intersection(recorded).count, rejected.count, restarts, copies, refusedTokens)
    }

    /// A random command on the replica's view (some refused locally, some later by the
    /// server: both are part of the property).
    static func randomCommand(_ replica: Replica, _ random: inout SplitMix64) -> Command {
        let chordsets = (try? replica.chordsets(ChordsetQuery(order: .index, limit: 5_000)).chordsets) ?? []
        let pick = chordsets.isEmpty ? nil : chordsets[Int(random.next() % UInt64(chordsets.count))]
        let roll = random.next() % 100
        if roll < 30 || (pick == nil && roll < 76) { return .addChordset(AddChordset(title: "t\(random.next() % 1_000)")) }
        switch roll {
        case 30..<48: return .renameChordset(id: pick!.id, title: "r\(random.next() % 1_000)")
        case 48..<56: return .deleteChordset(id: pick!.id)
        case 56..<64:
            let color = ChordColor(hue: Double(random.next() % 100) / 100, purity: 0.5, brightness: 0.5, alpha: 1)
            return .setChordColor(chordID: pick!.chords[Int(random.next() % 8)].id, color: color)
        case 64..<70: return .setChordBPM(chordID: pick!.chords[Int(random.next() % 8)].id, bpm: Double(60 + random.next() % 100))
        case 70..<76: return .moveChordset(id: pick!.id, toIndex: Int(random.next() % UInt64(chordsets.count)))
        case 76..<78:
            return .setControlsChord(SetControlsChord(
                bpm: Double(60 + random.next() % 100), color: ChordColor(hue: 0.5, purity: 0.5, brightness: 0.5, alpha: 1)))
        case 78..<79: return .deleteAll
        case 79..<92: return .undo
        default: return .redo
        }
    }
}
