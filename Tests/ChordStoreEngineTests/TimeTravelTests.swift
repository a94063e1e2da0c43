import ChordStoreDomain
@testable import ChordStoreEngine
import Foundation
import Testing
import TestSupport

/// Reads as of a point in the past, from snapshot files plus a bounded replay.
@Suite("Time travel")
struct TimeTravelTests {
    /// Appends about `events` events from 64 concurrent callers: adds, renames, tempo
    /// changes, moves, deletes, a few delete-alls, undos and redos from 4 sessions.
    static func fill(_ store: ChordStore, events: UInt64, seed: UInt64) async throws {
        var g = SplitMix64(seed: seed)
        var known: [Chordset] = []
        while try store.profile().lastSequence < events {
            var batch: [(Command, CommandContext)] = []
            for i in 0..<64 {
                let session = "s\(g.next() % 4)"
                let pick = known.isEmpty ? nil : known[Int(g.next() % UInt64(known.count))]
                let roll = g.next() % 1_000
                let command: Command = switch roll {
                case 0..<300: .addChordset(AddChordset(title: "t\(g.next() % 100_000)"))
                case 300..<500: .renameChordset(id: pick?.id ?? UUID(), title: "r\(g.next() % 100_000)")
                case 500..<650: .setChordBPM(chordID: pick?.chords[Int(g.next() % 8)].id ?? UUID(), bpm: Double(1 + g.next() % 900))
                case 650..<750: .moveChordset(id: pick?.id ?? UUID(), toIndex: Int(g.next() % 50))
                case 750..<820: .deleteChordset(id: pick?.id ?? UUID())
                case 820..<821: .deleteAll
                case 821..<920: .undo
                default: .redo
                }
                batch.append((command, CommandContext(session: session, commandID: "\(seed)-\(known.count)-\(i)-\(g.next())")))
            }
            let added = await withTaskGroup(of: Chordset?.self) { group in
                for (command, context) in batch {
                    group.addTask {
                        guard let recorded = try? await store.execute(command, context: context),
                              case .chordsetAdded(let chordset) = recorded.event else { return nil }
                        return chordset
                    }
                }
                var added: [Chordset] = []
                for await chordset in group { if let chordset { added.append(chordset) } }
                return added
            }
            known.append(contentsOf: added)
            if known.count > 5_000 { known.removeFirst(known.count - 5_000) }
        }
    }

    @Test("reads as of 20 random points of a 100,000-event log equal a replay truncated there")
    func asOfEqualsTruncatedReplay() async throws {
        try await onOwnThread {
            let store = try EngineKind.lmdb.makeStore(seed: 5) {
                $0.unsafeNoSync = true
                $0.snapshotInterval = 10_000
            }
            defer { store.close() }
            try await Self.fill(store, events: 100_000, seed: 5)
            let head = try store.profile().lastSequence
            try store.takeSnapshot()

            var g = SplitMix64(seed: 9)
            let points = ((0..<20).map { _ in 1 + g.next() % head } + [0, head]).sorted()
            var state = InMemoryState()
            var next: UInt64 = 1
            var timestamps: [UInt64: Instant] = [:]
            for point in points {
                while next <= point {
                    let page = try store.events(from: next, limit: Int(min(10_000, point - next + 1)))
                    for recorded in page {
                        try Fold.apply(recorded.event, sequence: recorded.sequence, to: &state)
                        timestamps[recorded.sequence] = recorded.timestamp
                    }
                    next += UInt64(page.count)
                }
                let expected = try StateSnapshot(of: state)
                let past = try store.state(asOf: .sequence(point))
                #expect(past.sequence == point)
                let actual = try past.snapshot
                #expect(actual == expected, "as of \(point): \(actual.firstDifference(from: expected) ?? "")")
                #expect(past.profile.chordsets == state.chordsetCount())

                // As of a time: the last event committed at or before it.
                if point > 0, let time = timestamps[point] {
                    let byTime = try store.state(asOf: .time(time))
                    #expect(byTime.sequence >= point)
                    let after = try store.events(from: byTime.sequence + 1, limit: 1).first
                    #expect(after.map { $0.timestamp > time } ?? true)
                }
            }
            // Reads before the first event and past the end.
            #expect(try store.state(asOf: .sequence(0)).profile.chordsets == 0)
            #expect(try store.state(asOf: .time(Instant(microsecondsSince1970: 0))).sequence == 0)
            let past = #expect(throws: ChordStoreError.self) { try store.state(asOf: .sequence(head + 1)) }
            #expect(past?.code == .outOfRange)
        }
    }

    @Test("a snapshot file reads back as the state it was taken at; a damaged one is skipped: the read replays from an earlier point and is still right", arguments: [false, true])
    func damagedSnapshot(live: Bool) async throws {
        let directory = temporaryDirectory()
        var options = ChordStore.Options()
        options.snapshotInterval = nil
        options.liveState = live  // the views' records are copied into the file; the live state's chordsets encoded
        let store = try ChordStore.open(at: directory, options: options)
        defer { store.close() }
        var sets: [Chordset] = []
        for i in 0..<20 { sets.append(try await store.add("set \(i)")) }
        let first = try store.takeSnapshot()
        for set in sets { try await store.execute(.renameChordset(id: set.id, title: "later \(set.title)")) }
        let expected = try store.state(asOf: .sequence(first + 5)).snapshot

        let second = try store.takeSnapshot()
        #expect(second == first + 20)
        // The file taken just now reads back whole, as the state it was taken at.
        let files = SnapshotFiles(directory: directory.appendingPathComponent("snapshots"), interval: nil)
        let loaded = files.load(after: first, atMost: second) { _, _ in true }
        #expect(loaded?.sequence == second)
        let read = try loaded.map { try StateSnapshot(of: $0.state) }
        #expect(read?.chordsets.map(\.title) == sets.map { "later \($0.title)" })
        #expect(read?.chordsets.map(\.id) == sets.map(\.id))
        #expect(read == (try store.state(asOf: .sequence(second)).snapshot))
        // Flip a byte in the middle of the first snapshot file.
        let file = directory.appendingPathComponent("snapshots").appendingPathComponent(
            String(repeating: "0", count: 20 - String(first).count) + "\(first).snap")
        var bytes = try Data(contentsOf: file)
        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: file)
        #expect(try store.state(asOf: .sequence(second)).profile.chordsets == 20)
        #expect(try store.state(asOf: .sequence(first + 5)).snapshot == expected)
        #expect(try store.state(asOf: .sequence(first + 6)).profile.chordsets == 20)
    }
}
