@testable import ChordStoreGRPC
import NIOCore
import Testing

/// The scanner that takes a gRPC client's stream resets out of its connection's bytes,
/// on plain bytes split every way.
@Suite("HTTP/2 stream reset scanner (pure)")
struct StreamResetScannerTests {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    static func frame(type: UInt8, stream: UInt32, payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), type, 0,
                UInt8(stream >> 24), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)] + payload
    }

    /// Scans `bytes` in chunks of the given sizes; returns what passed and the resets.
    static func scan(_ bytes: [UInt8], chunks: [Int], takesResets: Bool = true) -> (passed: [UInt8], resets: [UInt32]) {
        var scanner = StreamResetScanner()
        scanner.takesResets = takesResets
        var (passed, resets, offset) = ([UInt8](), [UInt32](), 0)
        var sizes = chunks[...]
        while offset < bytes.count {
            let size = min(sizes.popFirst() ?? bytes.count, bytes.count - offset)
            let chunk = Array(bytes[offset..<(offset + size)])
            let output = chunk.withUnsafeBytes { scanner.scan($0) }
            for segment in output.pass {
                switch segment {
                case .held(let held): passed += held
                case .range(let range): passed += chunk[range]
                }
            }
            resets += output.resets.filter(\.taken).map(\.stream)
            offset += size
        }
        return (passed, resets)
    }

    @Test("resets are taken out, every other byte passes in order, however the bytes are split")
    func takesOutResets() {
        let headers = Self.frame(type: 0x1, stream: 1, payload: Array(repeating: 7, count: 40))
        let data = Self.frame(type: 0x0, stream: 1, payload: Array(repeating: 9, count: 100))
        let reset1 = Self.frame(type: 0x3, stream: 1, payload: [0, 0, 0, 8])
        let settings = Self.frame(type: 0x4, stream: 0, payload: [])
        let reset3 = Self.frame(type: 0x3, stream: 3 | 0x8000_0000, payload: [0, 0, 0, 8])  // the reserved bit is not the id's
        let ping = Self.frame(type: 0x6, stream: 0, payload: Array(repeating: 1, count: 8))
        let connection = Self.preface + headers + data + reset1 + settings + reset3 + ping
        let expected = Self.preface + headers + data + settings + ping
        var generator = SystemRandomNumberGenerator()
        let splits: [[Int]] = [[connection.count], Array(repeating: 1, count: connection.count), [24, 9, 40, 5, 4, 100], [30, 3, 200]]
            + (0..<200).map { _ in (0..<40).map { _ in Int.random(in: 1...30, using: &generator) } }
        for chunks in splits {
            let (passed, resets) = Self.scan(connection, chunks: chunks)
            #expect(passed == expected, "split \(chunks)")
            #expect(resets == [1, 3], "split \(chunks)")
        }
        for chunks in splits.prefix(50) {
            let (all, none) = Self.scan(connection, chunks: chunks, takesResets: false)
            #expect(all == connection && none.isEmpty, "with resets passed on, every byte passes: split \(chunks)")
        }
    }

    @Test("the rate of resets counts the last 30 seconds only")
    func resetRate() {
        var rate = ResetRate()
        let start = NIODeadline.uptimeNanoseconds(100_000_000_000)
        for _ in 0..<5 { _ = rate.count(at: start) }
        #expect(rate.count(at: start + .seconds(10)) == 6)
        #expect(rate.count(at: start + .seconds(29)) == 7)
        #expect(rate.count(at: start + .seconds(31)) == 3, "the first second's five are gone")
        #expect(rate.count(at: start + .seconds(200)) == 1)
    }
}
