import ChordStoreDomain
import ChordStoreEngine
import Foundation
import Testing

/// The two engines every behavioural test runs against.
enum EngineKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case inMemory = "in-memory"
    case lmdb = "LMDB"
    /// The LMDB backend with its state in memory (``ChordStore/Options/liveState``).
    case live = "LMDB, live state"

    var testDescription: String { rawValue }

    /// A fresh, empty store of this kind with a fixed seed.
    func makeStore(seed: UInt64 = 1, configure: (inout ChordStore.Options) -> Void = { _ in }) throws -> ChordStore {
        var options = ChordStore.Options()
        options.seed = seed
        configure(&options)
        switch self {
        case .inMemory: return ChordStore.inMemory(options: options)
        case .lmdb: return try ChordStore.open(at: temporaryDirectory(), options: options)
        case .live:
            options.liveState = true
            return try ChordStore.open(at: temporaryDirectory(), options: options)
        }
    }
}

/// A new, unique directory under the system's temporary directory.
func temporaryDirectory() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("chordstore-tests-\(UUID().uuidString)")
}

extension ChordStore {
    /// The raw records of the whole log from `sequence` on, as stored.
    func rawRecords(from sequence: UInt64 = 1) throws -> [[UInt8]] {
        var records: [[UInt8]] = []
        try forEachRecord(from: sequence) { _, record in
            records.append(Array(record))
            return true
        }
        return records
    }

    /// Adds a chordset and returns it.
    func add(_ title: String = "", id: UUID? = nil) async throws -> Chordset {
        let recorded = try await execute(.addChordset(AddChordset(id: id, title: title)))
        guard case .chordsetAdded(let chordset) = recorded.event else {
            throw ChordStoreError(.internal, "add returned \(recorded.event.kindName)")
        }
        return chordset
    }

    /// The state a replay of the whole log produces.
    func replayedSnapshot() throws -> StateSnapshot {
        let events = try self.events(from: 1, limit: .max).map(\.event)
        return try StateSnapshot(of: InMemoryState(replaying: events))
    }

    /// The live views' state, read through the public API.
    func liveSnapshot() throws -> StateSnapshot {
        StateSnapshot(chordsets: try chordsets(order: .index), controlsChord: try controlsChord())
    }
}

extension StateSnapshot {
    init(chordsets: [Chordset], controlsChord: Chord?) {
        self = try! StateSnapshot(of: InMemoryState())
        self.chordsets = chordsets
        self.controlsChord = controlsChord
    }
}
