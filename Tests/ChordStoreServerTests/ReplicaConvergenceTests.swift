import ChordStoreClient
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreReplica
import ChordStoreServer
import Foundation
import Testing

/// The device replica's convergence property (docs/DEVICES.md): three replicas and a
/// server, random interleavings of local writes (every command, undo and redo included),
/// offline and online switches, replica reopens from disk (an app restart; one in four
/// after a random bit of the copy of the events flipped) and server restarts. At the
/// end, after every replica synced twice, every replica equals the server's store,
/// every write the server confirmed is in its log once, and every write made was either
/// confirmed or refused.
///
/// `CHORDSTORE_REPLICA_SCHEDULES` sets the number of schedules (200 by default; the
/// longer run recorded in docs/DEVICES.md used more).
@Suite("Device replicas converge", .serialized)
struct ReplicaConvergenceTests {
    static let schedules = ProcessInfo.processInfo.environment["CHORDSTORE_REPLICA_SCHEDULES"].flatMap(Int.init) ?? 200
    static let steps = 30
    static let devices = 3

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
            server = try await TestServer.start(store: try ChordStore.open(at: directory, options: options))
        }

        func stop() async {
            await server?.stop()
            server = nil
        }

        func client(store: String) -> Client? {
            server.map { Client(host: "127.0.0.1", port: $0.port, retry: .once, store: store) }
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
        var totals = (writes: 0, confirmed: 0, rejected: 0, restarts: 0)
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
        }
        await host.stop()
        print("replica convergence: \(Self.schedules) schedules, \(totals.writes) local writes, \(totals.confirmed) confirmed, \(totals.rejected) refused, \(totals.restarts) server restarts")
        #expect(totals.confirmed > totals.rejected)
    }

    func run(schedule: UInt64, _ host: RestartableServer) async throws -> (writes: Int, confirmed: Int, rejected: Int, restarts: Int) {
        var random = SplitMix64(seed: schedule &* 0x9E37_79B9 &+ 17)
        let store = "s\(schedule)"
        _ = try await host.server!.store.createStore(store)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("replica-schedule-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        var devices = try (0..<Self.devices).map { index in
            let directory = root.appendingPathComponent("device\(index)")
            return Device(directory: directory, replica: try Replica.open(at: directory, store: store))
        }
        var made: Set<String> = []
        var confirmed: [String: UInt64] = [:]
        var restarts = 0

        func sync(_ device: inout Device) async throws {
            guard let replica = device.replica else { return }
            guard let client = host.client(store: store) else {
                // The server is down: a sync says so and loses nothing.
                let before = replica.pendingWrites.map(\.commandID)
                let down = Client(host: "127.0.0.1", port: 1, retry: .once, store: store)
                let error = await #expect(throws: ReplicaError.self) { _ = try await replica.sync(with: down, timeout: .seconds(5)) }
                #expect(error?.code == .offline)
                #expect(replica.pendingWrites.map(\.commandID) == before)
                return
            }
            defer { Task { await client.close() } }
            let report = try await replica.sync(with: client, timeout: .seconds(10))
            for (commandID, sequence) in report.confirmed { confirmed[commandID] = sequence }
        }

        for _ in 0..<Self.steps {
            let index = Int(random.next() % UInt64(Self.devices))
            let roll = random.next() % 100
            switch roll {
            case 0..<55:
                guard let replica = devices[index].replica else { break }
                if let write = try? replica.perform(Self.randomCommand(replica, &random)) { made.insert(write.commandID) }
            case 55..<80:
                if devices[index].online { try await sync(&devices[index]) }
            case 80..<88:
                devices[index].online.toggle()
            case 88..<96:
                devices[index].replica?.close()
                if random.next() % 4 == 0 {
                    // A bit of the copy of the events flipped on the device's disk while the
                    // app was away: found, copied again, the queue untouched.
                    let file = devices[index].directory.appendingPathComponent("events.sqlite")
                    let size = try Data(contentsOf: file).count
                    try ReplicaFiles.flip(file, at: Int(random.next() % UInt64(size)), bit: Int(random.next() % 8))
                }
                devices[index].replica = try Replica.open(at: devices[index].directory)
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
        for device in devices {
            let replica = try #require(device.replica)
            #expect(try replica.chordsets(ChordsetQuery(order: .index, limit: 5_000)).chordsets == expected, "schedule \(schedule)")
            #expect(replica.controlsChord() == controls, "schedule \(schedule)")
            #expect(replica.lastSequence == (try server.profile(store: store).lastSequence))
            for rejection in try replica.rejectedWrites(limit: 1_000) { rejected.insert(rejection.write.commandID) }
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
        #expect(recorded.intersection(rejected).isEmpty)
        return (made.count, made.intersection(recorded).count, rejected.count, restarts)
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
