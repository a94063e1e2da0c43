import ChordStoreDomain
import ChordStoreEngine
import Foundation
import Synchronization

/// Threads that read one chordset in a loop until stopped (`bench append --readers`).
final class ReadLoad: Sendable {
    private let stopped = Atomic(false)
    private let reads = Atomic(0)
    private let finished = DispatchGroup()

    /// Adds the chordset the threads read (its event is not counted), then starts them.
    init(store: ChordStore, threads: Int) async throws {
        guard threads > 0 else { return }
        let added: RecordedEvent
        do {
            added = try await store.execute(.addChordset(AddChordset(title: "read by the readers")))
        } catch {
            throw Failure(error)
        }
        guard case .chordsetAdded(let chordset) = added.event else { return }
        for _ in 0..<threads {
            finished.enter()
            Thread { [self] in
                while !stopped.load(ordering: .relaxed) {
                    _ = try? store.chordset(chordset.id)
                    reads.add(1, ordering: .relaxed)
                }
                finished.leave()
            }.start()
        }
    }

    /// How many reads the threads have made so far.
    var count: Int { reads.load(ordering: .relaxed) }

    /// Stops the threads (again: no effect); returns how many reads they made.
    func stop() -> Int {
        stopped.store(true, ordering: .relaxed)
        finished.wait()
        return count
    }
}
