@testable import ChordStoreEngine
import Foundation
import Synchronization
import Testing

/// The in-memory engine's published state: readers never wait for the writer, a reader's
/// value holds still, and the writer changes its copy in place (waiting up to its grace for
/// a reader of that copy, then copying instead).
@Suite("Left-right published value")
struct LeftRightTests {
    /// Adds 1 to every element: a change whose replay is itself.
    static func incrementAll(_ values: inout [Int]) {
        for index in values.indices { values[index] += 1 }
    }

    static func incrementing(_ values: inout [Int]) -> (result: Int, replay: @Sendable (inout [Int]) throws -> Void) {
        incrementAll(&values)
        return (values[0], { incrementAll(&$0) })
    }

    @Test("each write is published and the other copy catches up: 50 writes read back as 50")
    func writesArePublished() throws {
        let value = LeftRight([Int](repeating: 0, count: 64))
        for round in 1...50 {
            let result = try value.write { Self.incrementing(&$0) }
            #expect(result == round)
            let read = value.read { $0 }
            #expect(read == [Int](repeating: round, count: 64))
        }
    }

    /// A value with copy-on-write storage that counts its copies (all copies share the count).
    struct Tracked: Sendable {
        final class Count: Sendable { let copies = Atomic(0) }
        final class Storage: @unchecked Sendable {
            var values: [Int]
            let count: Count
            init(_ values: [Int], count: Count) {
                self.values = values
                self.count = count
            }
        }

        var storage: Storage
        init(count: Int) { storage = Storage([Int](repeating: 0, count: count), count: Count()) }
        var values: [Int] { storage.values }
        var copies: Int { storage.count.copies.load(ordering: .relaxed) }

        mutating func incrementAll() {
            if !isKnownUniquelyReferenced(&storage) {
                storage = Storage(storage.values, count: storage.count)
                storage.count.copies.add(1, ordering: .relaxed)
            }
            for index in storage.values.indices { storage.values[index] += 1 }
        }

        static func incrementing(_ value: inout Tracked) -> (result: Int, replay: @Sendable (inout Tracked) throws -> Void) {
            value.incrementAll()
            return (value.values[0], { $0.incrementAll() })
        }
    }

    @Test("with no reader holding on, the writer changes its copy in place: one copy (the first change's) in 100 writes")
    func changesInPlace() throws {
        let value = LeftRight(Tracked(count: 1_000))
        for _ in 0..<100 { _ = try value.write { Tracked.incrementing(&$0) } }
        #expect(value.read { $0.copies } == 1)
        #expect(value.fallbackCopies == 0)
        #expect(value.read { $0.values[999] } == 100)
    }

    /// What a reader read, once its read ended.
    final class Seen: Sendable {
        let values = Mutex<[Int]>([])
    }

    /// Starts a thread that reads `value` and holds on to it until `release` is signalled;
    /// returns once the read began, with where the values it read go.
    static func holdingReader(_ value: LeftRight<Tracked>, until release: DispatchSemaphore) -> Seen {
        let entered = DispatchSemaphore(value: 0)
        let seen = Seen()
        Thread {
            let held = value.read { tracked -> [Int] in
                entered.signal()
                release.wait()
                return tracked.values
            }
            seen.values.withLock { $0 = held }
        }.start()
        entered.wait()
        return seen
    }

    @Test("a reader that stays keeps its value while the writer goes on: after a short grace, the writer copies once for it")
    func readerHoldsStill() throws {
        let value = LeftRight(Tracked(count: 16), readerGrace: .milliseconds(1))
        _ = try value.write { Tracked.incrementing(&$0) }
        let release = DispatchSemaphore(value: 0)
        let seen = Self.holdingReader(value, until: release)
        // Three writes while the reader holds the copy it read: none waits for it to end.
        for _ in 0..<3 { _ = try value.write { Tracked.incrementing(&$0) } }
        #expect(value.read { $0.values } == [Int](repeating: 4, count: 16))
        release.signal()
        while seen.values.withLock({ $0.isEmpty }) { Thread.sleep(forTimeInterval: 0.001) }
        #expect(seen.values.withLock { $0 } == [Int](repeating: 1, count: 16))
        for _ in 0..<3 { _ = try value.write { Tracked.incrementing(&$0) } }
        #expect(value.read { $0.values } == [Int](repeating: 7, count: 16))
        // The first change's copy, and one for the reader that stayed.
        #expect(value.read { $0.copies } == 2)
        #expect(value.fallbackCopies == 1)
    }

    @Test("a reader that lets go within the grace makes the writer wait for it, not copy")
    func readerWithinGrace() throws {
        let value = LeftRight(Tracked(count: 16), readerGrace: .seconds(30))
        _ = try value.write { Tracked.incrementing(&$0) }
        let release = DispatchSemaphore(value: 0)
        let released = Atomic(false)
        _ = Self.holdingReader(value, until: release)
        // The first write changes the other copy; the second needs the reader's.
        _ = try value.write { Tracked.incrementing(&$0) }
        let wrote = DispatchSemaphore(value: 0)
        let waited = Atomic(false)
        Thread {
            _ = try? value.write { Tracked.incrementing(&$0) }
            waited.store(released.load(ordering: .acquiring), ordering: .releasing)
            wrote.signal()
        }.start()
        Thread.sleep(forTimeInterval: 0.05)
        released.store(true, ordering: .releasing)
        release.signal()
        wrote.wait()
        let writerWaited = waited.load(ordering: .acquiring)
        #expect(writerWaited)
        #expect(value.fallbackCopies == 0)
        #expect(value.read { $0.copies } == 1)
        #expect(value.read { $0.values } == [Int](repeating: 3, count: 16))
    }

    struct Refused: Error {}

    @Test("a replay that fails makes the writer copy the published value instead: nothing is lost")
    func failedReplay() throws {
        let value = LeftRight([Int](repeating: 0, count: 8))
        _ = try value.write { values -> (result: Int, replay: @Sendable (inout [Int]) throws -> Void) in
            Self.incrementAll(&values)
            return (values[0], { _ in throw Refused() })
        }
        _ = try value.write { Self.incrementing(&$0) }
        #expect(value.fallbackCopies == 1)
        #expect(value.read { $0 } == [Int](repeating: 2, count: 8))
        _ = try value.write { Self.incrementing(&$0) }
        #expect(value.read { $0 } == [Int](repeating: 3, count: 8))
        #expect(value.fallbackCopies == 1)
    }

    @Test("a change that throws publishes nothing, and the next change starts from the published value")
    func failedChange() throws {
        let value = LeftRight([Int](repeating: 0, count: 8))
        _ = try value.write { Self.incrementing(&$0) }
        #expect(throws: Refused.self) {
            try value.write { values -> (result: Int, replay: @Sendable (inout [Int]) throws -> Void) in
                Self.incrementAll(&values)
                Self.incrementAll(&values)
                throw Refused()
            }
        }
        #expect(value.read { $0 } == [Int](repeating: 1, count: 8))
        #expect(value.fallbackCopies == 1)
        _ = try value.write { Self.incrementing(&$0) }
        #expect(value.read { $0 } == [Int](repeating: 2, count: 8))
        _ = try value.write { Self.incrementing(&$0) }
        #expect(value.read { $0 } == [Int](repeating: 3, count: 8))
    }

    @Test("a replacement reaches both copies")
    func replacement() throws {
        let value = LeftRight([1, 2, 3])
        _ = try value.write { Self.incrementing(&$0) }
        value.replace { _ in [10, 10] }
        #expect(value.read { $0 } == [10, 10])
        _ = try value.write { Self.incrementing(&$0) }
        _ = try value.write { Self.incrementing(&$0) }
        #expect(value.read { $0 } == [12, 12])
    }

    @Test("four readers never see a half-made change while the writer publishes 300")
    func concurrentReaders() throws {
        let value = LeftRight([Int](repeating: 0, count: 256))
        let stop = Atomic(false)
        let torn = Atomic(0)
        let reads = Atomic(0)
        let finished = DispatchGroup()
        for _ in 0..<4 {
            finished.enter()
            Thread {
                var last = 0
                while !stop.load(ordering: .relaxed) {
                    let (first, same) = value.read { values in (values[0], values.allSatisfy { $0 == values[0] }) }
                    if !same || first < last { torn.add(1, ordering: .relaxed) }
                    last = first
                    reads.add(1, ordering: .relaxed)
                }
                finished.leave()
            }.start()
        }
        // Readers that spin hold a copy most of the time, and the scheduler stops them
        // while they do: a write can wait for its grace. 300 keep the test short.
        for _ in 0..<300 { _ = try value.write { Self.incrementing(&$0) } }
        stop.store(true, ordering: .relaxed)
        finished.wait()
        let tornReads = torn.load(ordering: .relaxed)
        #expect(tornReads == 0)
        #expect(value.read { $0 } == [Int](repeating: 300, count: 256))
    }
}
