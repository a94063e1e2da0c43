import ChordStoreRecords
import ChordStoreDomain
import ChordStoreEngine
import Foundation
import Testing

/// The follower's half of replication in the engine: byte-identical copies, the
/// append-entries check, refusal of tampered or mismatched batches, epochs, and cutting
/// a divergent suffix into a parked file.
@Suite("Replica log")
struct ReplicaTests {
    private func leaderWithEvents(_ kind: EngineKind, count: Int) async throws -> ChordStore {
        let leader = try kind.makeStore(seed: 7)
        var ids: [UUID] = []
        for index in 0..<count {
            if index % 3 == 2, let id = ids.last {
                try await leader.execute(.renameChordset(id: id, title: "renamed \(index)"))
            } else {
                ids.append(try await leader.add("title \(index)").id)
            }
        }
        try await leader.execute(.undo, context: CommandContext(session: "local", commandID: "undo-1"))
        return leader
    }

    @Test("a follower fed in batches holds the leader's log byte for byte, and the same views", arguments: EngineKind.allCases)
    func copiesByteForByte(kind: EngineKind) async throws {
        let leader = try await leaderWithEvents(kind, count: 60)
        defer { leader.close() }
        let follower = try kind.makeStore(seed: 99)
        defer { follower.close() }
        let all = try leader.rawRecords()
        var previous = LogPosition.start
        for start in stride(from: 0, to: all.count, by: 7) {
            previous = try await follower.appendReplicated(Array(all[start..<min(start + 7, all.count)]), after: previous)
        }
        // Answered once logged; readers see the batch once the views folded it.
        await follower.waitForCommit(after: previous.sequence - 1, timeout: .seconds(10))
        #expect(try follower.rawRecords() == all)
        #expect(try follower.head() == leader.head())
        #expect(try follower.chordsets() == leader.chordsets())
        #expect(try follower.session("local") == leader.session("local"))
        #expect(try follower.verify().isSound)
        // Command ids came along: a retried command on the follower's copy is recognised.
        #expect(try follower.events(from: UInt64(all.count), limit: 1).first?.commandID == "undo-1")
    }

    @Test("a batch whose previous event is not this log's last is refused whole", arguments: EngineKind.allCases)
    func refusesMismatchedBatch(kind: EngineKind) async throws {
        let leader = try await leaderWithEvents(kind, count: 10)
        defer { leader.close() }
        let follower = try kind.makeStore()
        defer { follower.close() }
        let all = try leader.rawRecords()
        let first = try await follower.appendReplicated(Array(all[0..<5]), after: .start)
        // Skipping records: the batch names event 6 as its previous one.
        let skipping = try #require(try leader.position(at: 6))
        await #expect(throws: ChordStoreError.self) { try await follower.appendReplicated(Array(all[6...]), after: skipping) }
        // The right sequence number but another log's checksum.
        var forged = first
        forged.checksum ^= 1
        let error = await #expect(throws: ChordStoreError.self) { try await follower.appendReplicated(Array(all[5...]), after: forged) }
        #expect(error?.code == .failedPrecondition)
        #expect(error?.message.hasPrefix("diverged") == true)
        #expect(try follower.head() == first)
    }

    @Test("a tampered record fails the checksum chain and nothing of its batch is kept", arguments: EngineKind.allCases)
    func refusesTamperedBatch(kind: EngineKind) async throws {
        let leader = try await leaderWithEvents(kind, count: 10)
        defer { leader.close() }
        let follower = try kind.makeStore()
        defer { follower.close() }
        var batch = try leader.rawRecords()
        let title = Array("title 3".utf8)
        func offset(of title: [UInt8], in record: [UInt8]) -> Int? {
            record.indices.first { record[$0...].starts(with: title) }
        }
        let index = try #require(batch.firstIndex { offset(of: title, in: $0) != nil })
        let at = try #require(offset(of: title, in: batch[index]))
        batch[index][at] = UInt8(ascii: "T")  // "Title 3": a valid envelope, a different event
        let error = await #expect(throws: ChordStoreError.self) { try await follower.appendReplicated(batch, after: .start) }
        #expect(error?.code == .dataLoss)
        #expect(try follower.head() == .start)
        #expect(try follower.chordsets().isEmpty)
        // Reordered records fail too.
        var reordered = try leader.rawRecords()
        reordered.swapAt(1, 2)
        await #expect(throws: ChordStoreError.self) { try await follower.appendReplicated(reordered, after: .start) }
        #expect(try follower.head() == .start)
    }

    @Test("records keep the epoch that wrote them; a store's epoch only rises and survives a restart")
    func epochs() async throws {
        let directory = temporaryDirectory()
        var store = try ChordStore.open(at: directory)
        _ = try await store.add("epoch 1")
        #expect(store.epoch == 1)
        #expect(try await store.adoptEpoch(3) == 3)
        #expect(try await store.adoptEpoch(2) == 3)
        _ = try await store.add("epoch 3")
        #expect(try store.events(from: 1).map(\.epoch) == [1, 3])
        store.close()
        store = try ChordStore.open(at: directory)
        defer { store.close() }
        #expect(store.epoch == 3)
        #expect(try store.head().epoch == 3)
    }

    @Test("a store that does not accept commands refuses them in the writer")
    func refusesCommandsWhenFollowing() async throws {
        let store = ChordStore.inMemory()
        defer { store.close() }
        store.acceptsCommands = false
        let error = await #expect(throws: ChordStoreError.self) { try await store.add("refused") }
        #expect(error?.code == .failedPrecondition)
        store.acceptsCommands = true
        _ = try await store.add("accepted")
        #expect(try store.chordsets().map(\.title) == ["accepted"])
    }

    @Test("past the write deadline (a lapsed leader lease) commands are refused as not the leader; before it, or with none, they commit")
    func writeDeadline() async throws {
        let store = ChordStore.inMemory()
        defer { store.close() }
        store.writeDeadline = .now - .milliseconds(1)
        let error = await #expect(throws: ChordStoreError.self) { try await store.add("too late") }
        #expect(error?.code == .failedPrecondition)
        #expect(error?.reason == .notLeader && error?.message.contains("lease lapsed") == true)
        let later = ContinuousClock.now + .seconds(60)
        store.writeDeadline = later
        #expect(store.writeDeadline == later)
        _ = try await store.add("in time")
        store.writeDeadline = nil
        #expect(store.writeDeadline == nil)
        _ = try await store.add("no lease")
        #expect(try store.chordsets().map(\.title) == ["in time", "no lease"])
    }

    @Test("truncating parks the cut records in a readable file and rebuilds the views", arguments: EngineKind.allCases)
    func truncateParks(kind: EngineKind) async throws {
        let store = try await leaderWithEvents(kind, count: 30)
        defer { store.close() }
        let before = try store.rawRecords()
        let kept = try store.events(from: 1, limit: 20)
        let expected = try replayed(kept)
        let park = temporaryDirectory()
        let parked = try #require(try await store.truncate(after: 20, parkingIn: park))
        #expect(parked.first == 21)
        #expect(parked.last == UInt64(before.count))
        #expect(try store.rawRecords() == Array(before[..<20]))
        #expect(try store.chordsets() == expected)
        #expect(try store.verify().isSound)
        // Every parked line holds the exact record bytes.
        let lines = try String(contentsOf: parked.file, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == before.count - 20)
        for (offset, line) in lines.enumerated() {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let encoded = try #require(object["record"] as? String)
            let record = try #require(Data(base64Encoded: encoded))
            #expect(Array(record) == before[20 + offset])
            #expect(object["sequence"] as? Int == 21 + offset)
        }
        // New events go on from the cut.
        _ = try await store.add("after the cut")
        #expect(try store.head().sequence == 21)
        #expect(try await store.truncate(after: 21, parkingIn: park) == nil)
    }

    /// The chordsets a replay of `events` gives, in creation order.
    private func replayed(_ events: [RecordedEvent]) throws -> [Chordset] {
        var state = InMemoryState()
        for event in events { _ = try Fold.apply(event.event, sequence: event.sequence, to: &state) }
        return state.chordsetIDsInOrder.compactMap(state.chordset).sorted {
            $0.creationDate != $1.creationDate ? $0.creationDate < $1.creationDate : $0.id.uuidString < $1.id.uuidString
        }
    }
}
