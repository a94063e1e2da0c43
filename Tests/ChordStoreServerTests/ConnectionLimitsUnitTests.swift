@testable import ChordStoreServer
import NIOCore
import Testing
import TestSupport

/// The pure parts of the connection limits: admission by address, frame boundaries, and
/// whether a client takes what it is sent.
@Suite("Connection limits (pure)")
struct ConnectionLimitsUnitTests {
    @Test("one address cannot take more than its share, and the reserve is kept for addresses that hold none")
    func admission() {
        var admission = ConnectionAdmission(maxConnections: 32, maxPerAddress: 8, maxUnauthenticated: 32)
        var next = 0
        func admit(_ address: String) -> ConnectionAdmission.Admission {
            next += 1
            let result = admission.admit(address, id: next)
            if result == .admitted(evicting: nil) { admission.authenticated(next) }  // each proves itself at once
            return result
        }
        let taken = ConnectionAdmission.Admission.admitted(evicting: nil)
        #expect(admission.reserve == 2)
        for _ in 0..<8 { #expect(admit("10.0.0.1") == taken) }
        #expect(admit("10.0.0.1") == .refused(.perAddress))
        for host in 2...3 { for _ in 0..<8 { #expect(admit("10.0.0.\(host)") == taken) } }
        for _ in 0..<6 { #expect(admit("10.0.0.4") == taken) }
        // 30 taken: the last 2 go only to addresses with no connection.
        #expect(admit("10.0.0.4") == .refused(.reserved))
        #expect(admit("10.0.0.5") == taken)
        #expect(admit("10.0.0.6") == taken)
        #expect(admit("10.0.0.7") == .refused(.full))
        admission.release(1)  // a connection of 10.0.0.1
        #expect(admission.total == 31)
        #expect(admit("10.0.0.1") == .refused(.reserved))
        #expect(admit("10.0.0.8") == taken)
        admission.release(999)  // never admitted: nothing changes
        admission.release(1)  // released already: nothing changes
        #expect(admission.total == 32)
    }

    @Test("connections without a credential hold a small share: a new one past it, or past any limit, closes the oldest of them; proven ones are never closed")
    func unauthenticatedShare() {
        var admission = ConnectionAdmission(maxConnections: 32, maxPerAddress: 32, maxUnauthenticated: 4)
        // Strangers from six addresses, keeping their connections open with Health.
        var id = 0
        var strangers: [Int] = []
        for round in 0..<5 {
            for host in 1...6 {
                id += 1
                let result = admission.admit("10.9.9.\(host)", id: id)
                strangers.append(id)
                if round == 0, host <= 4 { #expect(result == .admitted(evicting: nil)) }
            }
        }
        #expect(admission.total == 4 && admission.unauthenticated == Array(strangers.suffix(4)), "strangers hold 4 slots at most")
        // A client with a token connects: it gets in, closing the oldest stranger, and
        // keeps its slot once its first call proves it.
        id += 1
        #expect(admission.admit("10.0.0.1", id: id) == .admitted(evicting: strangers[strangers.count - 4]))
        admission.authenticated(id)
        for more in 1...10 {
            #expect(admission.admit("10.9.9.1", id: id + more) != .refused(.full))
        }
        #expect(admission.holds(id) && admission.unauthenticated.count == 4)
        // Proven connections fill the server: a newcomer still gets in while a stranger
        // is left to close, and is refused once none is.
        var admin = id + 100
        func prove() -> ConnectionAdmission.Admission {
            admin += 1
            let result = admission.admit("10.1.\(admin / 250).\(admin % 250)", id: admin)
            if case .admitted = result { admission.authenticated(admin) }
            return result
        }
        while admission.total < 32 { _ = prove() }
        while let oldest = admission.unauthenticated.first { #expect(prove() == .admitted(evicting: oldest)) }
        #expect(prove() == .refused(.full))
        #expect(admission.total == 32)
    }

    @Test("the trim waits for releases to stop, never past its longest delay, and not more often than its interval")
    func trimSchedule() {
        var schedule = TrimSchedule(quiet: .seconds(1), longestDelay: .seconds(10), interval: .seconds(5))
        let t = ContinuousClock.now
        #expect(schedule.woke(at: t) == .idle)
        #expect(schedule.released(at: t) == t + .seconds(1))
        #expect(schedule.released(at: t + .milliseconds(500)) == nil)  // a wake-up is already set
        #expect(schedule.woke(at: t + .seconds(1)) == .sleep(until: t + .milliseconds(1_500)))
        #expect(schedule.woke(at: t + .milliseconds(1_500)) == .trim)
        #expect(schedule.woke(at: t + .seconds(2)) == .idle)
        // The next one waits for the interval since the last trim.
        #expect(schedule.released(at: t + .seconds(2)) == t + .milliseconds(6_500))
        #expect(schedule.woke(at: t + .milliseconds(6_500)) == .trim)
        // Releases that never stop: trimmed within the longest delay of the first.
        let u = t + .seconds(20)
        #expect(schedule.released(at: u) == u + .seconds(1))
        for step in 1...30 { _ = schedule.released(at: u + .milliseconds(500 * step)) }
        #expect(schedule.due == u + .seconds(10))
    }

    @Test("an IPv4 client counts by its address, an IPv6 one by its /64")
    func addressKeys() {
        #expect(ConnectionAdmission.key(for: "10.1.2.3") == "10.1.2.3")
        #expect(ConnectionAdmission.key(for: "::ffff:10.1.2.3") == "10.1.2.3")
        #expect(ConnectionAdmission.key(for: "2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64")
        #expect(ConnectionAdmission.key(for: "2001:db8:1:2:bbbb:cccc:dddd:eeee") == "2001:db8:1:2::/64")
        #expect(ConnectionAdmission.key(for: "2001:db8::1") == "2001:db8:0:0::/64")
        #expect(ConnectionAdmission.key(for: "::1") == "0:0:0:0::/64")
        #expect(ConnectionAdmission.key(for: "fe80::1%eth0") == "fe80:0:0:0::/64")
    }

    @Test("frames come out whole however the bytes are split, and a length over the limit is refused at its prefix")
    func frameSplitter() async {
        await onOwnThread {
            let stream: [UInt8] = [0, 0, 0, 3, 1, 2, 3] + [0, 0, 0, 0] + [0, 1, 0, 0] + Array(repeating: 7, count: 65_536)
            for split in [1, 2, 3, 5, 7, 100, stream.count] {
                var splitter = FrameSplitter(maxFrameSize: 1 << 20)
                var frames: [[UInt8]] = []
                var lengths: Set<Int> = []
                var offset = 0
                while offset < stream.count {
                    splitter.append(ByteBuffer(bytes: stream[offset..<min(offset + split, stream.count)]))
                    offset += split
                    reading: while true {
                        switch splitter.next() {
                        case .frame(let body): frames.append(Array(body.readableBytesView))
                        case .needMore(let length):
                            if let length { lengths.insert(length) }
                            break reading
                        case .tooLarge: Issue.record("no frame is over the limit")
                        }
                    }
                }
                #expect(frames == [[1, 2, 3], [], Array(repeating: 7, count: 65_536)], "split \(split)")
                #expect(lengths.isSubset(of: [3, 65_536]) && (split == stream.count || lengths.contains(65_536)), "split \(split): \(lengths)")
                #expect(splitter.completed == 3)
                #expect(!splitter.isMidFrame)
            }
            var partial = FrameSplitter(maxFrameSize: 1_000)
            partial.append(ByteBuffer(bytes: [0, 0]))
            #expect(partial.next() == .needMore(length: nil))
            #expect(partial.isMidFrame)
            partial.append(ByteBuffer(bytes: [3, 0xe9]))
            #expect(partial.next() == .tooLarge(length: 1_001))
        }
    }

    @Test("a client that takes nothing while bytes wait is stalled from its first such reading; any progress resets it")
    func readProgress() {
        var progress = ReadProgress()
        let start = ContinuousClock.now
        #expect(progress.observe(taken: 100, waiting: true, at: start) == .zero)
        #expect(progress.observe(taken: 100, waiting: true, at: start + .seconds(1)) == .zero)
        #expect(progress.observe(taken: 100, waiting: true, at: start + .seconds(4)) == .seconds(3))
        #expect(progress.observe(taken: 200, waiting: true, at: start + .seconds(5)) == .zero)
        #expect(progress.observe(taken: 200, waiting: false, at: start + .seconds(9)) == .zero)
        #expect(progress.observe(taken: 200, waiting: true, at: start + .seconds(10)) == .zero)
        #expect(progress.observe(taken: 200, waiting: true, at: start + .seconds(16)) == .seconds(6))
    }
}
