import ChordStoreDomain
@testable import ChordStoreEngine
import Foundation
import TestSupport
import Testing

/// What a small or full disk does to a durable store: writes are refused with
/// RESOURCE_EXHAUSTED while reads go on, nothing acknowledged is lost, and writes resume
/// once space is freed, without a restart.
@Suite("A store on a small or full disk", .serialized, .enabled(if: ScratchFilesystem.isAvailable, "mounting a tmpfs needs root"))
struct DiskFullTests {
    /// Adds chordsets 64 at a time until a whole round is refused (at most 500 rounds):
    /// once the disk is full, LMDB still reuses the pages of commits that failed, so a
    /// few writes may pass after the first refusal. Returns the ids acknowledged and the
    /// refusals, which must all say the disk is full.
    private func fill(_ store: ChordStore, tag: String) async -> (ids: [UUID], refusals: [ChordStoreError]) {
        var ids: [UUID] = []
        var refusals: [ChordStoreError] = []
        for round in 0..<500 {
            let results = await withTaskGroup(of: Result<UUID, ChordStoreError>.self) { group in
                for i in 0..<64 {
                    group.addTask {
                        do {
                            return .success(try await store.add("\(tag) \(round)-\(i) with a title long enough to take some room").id)
                        } catch let error as ChordStoreError {
                            return .failure(error)
                        } catch {
                            return .failure(ChordStoreError(.internal, "\(error)"))
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            var refused = 0
            for result in results {
                switch result {
                case .success(let id): ids.append(id)
                case .failure(let error):
                    refusals.append(error)
                    refused += 1
                }
            }
            if refused == results.count { break }
        }
        return (ids, refusals)
    }

    private func expectDiskFull(_ refusals: [ChordStoreError]) {
        #expect(!refusals.isEmpty, "the disk never filled")
        for refusal in refusals where refusal.code != .resourceExhausted || !refusal.message.contains("the disk is full") {
            Issue.record("a write was refused with \(refusal), not as a full disk")
            return
        }
    }

    private func options(live: Bool = false) -> ChordStore.Options {
        var options = ChordStore.Options()
        options.snapshotInterval = nil
        options.liveState = live
        return options
    }

    @Test("a store opens on a disk smaller than its views' first map, and takes writes")
    func smallDisk() async throws {
        let disk = try ScratchFilesystem(megabytes: 20)
        defer { disk.unmount() }
        let directory = disk.directory.appendingPathComponent("data")
        do {
            let store = try ChordStore.open(at: directory, options: options())
            _ = try await store.add("fits")
            store.close()
        }
        let store = try ChordStore.open(at: directory, options: options())
        defer { store.close() }
        #expect(try store.profile().chordsets == 1)
    }

    @Test("a full disk: writes refused with RESOURCE_EXHAUSTED, reads served, nothing acknowledged lost, writes resume once space is freed (views, then live state)", arguments: [false, true])
    func fullDisk(live: Bool) async throws {
        try await onOwnThread {
            let disk = try ScratchFilesystem(megabytes: 40)
            defer { disk.unmount() }
            let ballast = try disk.ballast("ballast", bytes: 10 << 20)
            let directory = disk.directory.appendingPathComponent("data")
            let store = try ChordStore.open(at: directory, options: options(live: live))
            // Writes are refused as a full disk (they once killed the process with SIGBUS).
            let (ids, refusals) = await fill(store, tag: "first")
            expectDiskFull(refusals)
            // Reads go on, and every acknowledged write is there.
            #expect(try store.profile().chordsets == ids.count)
            for id in ids.shuffled().prefix(200) { #expect(try store.chordset(id) != nil) }
            #expect(try store.events(from: 1, limit: 10).count == 10)
            // Space freed: writes resume in the same process.
            try FileManager.default.removeItem(at: ballast)
            let after = try await store.add("after freeing")
            #expect(try store.chordset(after.id) != nil)
            #expect(try store.verify().isSound)
            store.close()
        }
    }

    @Test("a store reopened on a full disk serves reads and takes writes once space is freed; on the views it refuses them until then, with live state its log takes what it has room for (kept), and the views catch up after", arguments: [false, true])
    func reopenOnFullDisk(live: Bool) async throws {
        try await onOwnThread {
            let disk = try ScratchFilesystem(megabytes: 40)
            defer { disk.unmount() }
            let ballast = try disk.ballast("ballast", bytes: 10 << 20)
            let directory = disk.directory.appendingPathComponent("data")
            let ids: [UUID]
            do {
                let store = try ChordStore.open(at: directory, options: options(live: live))
                let filled = await fill(store, tag: "before")
                expectDiskFull(filled.refusals)
                ids = filled.ids
                store.close()
            }
            // Take what little room is left, so the reopened store finds none.
            let free = disk.freeBytes
            let rest = free > 8_192 ? try disk.ballast("rest", bytes: free - 4_096) : nil
            let store = try ChordStore.open(at: directory, options: options(live: live))
            defer { store.close() }
            #expect(try store.profile().chordsets == ids.count)
            // The views cannot be written (not even marked open). With live state the log may
            // still have free pages of its own: each add is taken and kept, or refused as a
            // full disk. On the views, the adds are refused.
            var taken: [UUID] = []
            var refusals: [ChordStoreError] = []
            for i in 0..<200 {
                do {
                    taken.append(try await store.add("on a full disk \(i)").id)
                } catch let error as ChordStoreError {
                    refusals.append(error)
                    if !live { break }
                }
            }
            if !live { #expect(!refusals.isEmpty, "the views took writes on a full disk") }
            for refusal in refusals { #expect(refusal.code == .resourceExhausted && (!live || refusal.reason == .diskFull), "\(refusal)") }
            for id in taken { #expect(try store.chordset(id) != nil) }
            try FileManager.default.removeItem(at: ballast)
            if let rest { try FileManager.default.removeItem(at: rest) }
            _ = try await store.add("after freeing")
            if live {
                let backend = try #require(store.backend as? LMDBBackend)
                backend.catchUpViews()
                #expect(backend.viewsLag == 0)
            }
            let report = try store.verify()
            #expect(report.isSound, "\(String(describing: report.problem))")
            #expect(try store.profile().chordsets == ids.count + taken.count + 1)
        }
    }
}
