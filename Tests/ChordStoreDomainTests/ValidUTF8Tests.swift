import ChordStoreDomain
import Testing

/// `String(validUTF8:)`, the frame's and the records' reading of strings, answers what the
/// standard library's validating initializer answers, on valid and invalid input alike.
@Suite("Strings read from bytes")
struct ValidUTF8Tests {
    static func expectSame(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        bytes.withUnsafeBytes { raw in
            // Bytes, not strings: `==` on strings takes canonically equivalent ones as equal.
            #expect(
                String(validUTF8: raw).map { Array($0.utf8) } == String(validating: raw, as: UTF8.self).map { Array($0.utf8) }, "\(bytes)",
                sourceLocation: sourceLocation)
        }
    }

    @Test("valid text reads as itself; every kind of invalid sequence is refused")
    func knownCases() {
        let valid: [[UInt8]] = [
            [], Array("default".utf8), Array("chordset 7 — Ünïcödé".utf8), Array("😀 emoji".utf8),
            [0xEF, 0xBF, 0xBD],  // U+FFFD itself, which a repair writes
            [0xF4, 0x8F, 0xBF, 0xBF],  // U+10FFFF, the last scalar
            [0x00], Array("a\u{0}b".utf8),
            Array("a title of more than sixteen bytes, é".utf8),  // compared eight bytes at a time
        ]
        for bytes in valid {
            bytes.withUnsafeBytes { #expect(String(validUTF8: $0).map { Array($0.utf8) } == bytes) }
        }
        let invalid: [[UInt8]] = [
            [0xFF], [0x80], [0xC0, 0x80],  // a stray byte, a lone continuation, an overlong NUL
            [0xE0, 0x80, 0xAF],  // overlong
            [0xED, 0xA0, 0x80],  // a surrogate
            [0xF4, 0x90, 0x80, 0x80],  // past U+10FFFF
            [0xE2, 0x82],  // cut short
            Array("title".utf8) + [0xC3],  // cut short at the end
            // A cut-short emoji is repaired as one U+FFFD, of its own length: only the
            // bytes tell it apart, in the last bytes, the first eight and the next eight.
            [0xF0, 0x9F, 0x98] + Array("x".utf8),
            [0xF0, 0x9F, 0x98] + Array("abcdefghij".utf8),
            Array("abcdefgh".utf8) + [0xF0, 0x9F, 0x98] + Array("x1234567".utf8),
        ]
        for bytes in invalid {
            bytes.withUnsafeBytes { #expect(String(validUTF8: $0) == nil, "\(bytes)") }
            Self.expectSame(bytes)
        }
        #expect(String(validUTF8: UnsafeRawBufferPointer(start: nil, count: 0)) == "")
    }

    @Test("random bytes, and random text with a byte changed, read as the standard library reads them")
    func randomInput() {
        var random = SplitMix64(seed: 38)
        let alphabet = Array("aZ 0é€😀\u{FFFD}".unicodeScalars)
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int(random.next() % 12)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            } else {
                var text = ""
                for _ in 0..<Int(random.next() % 8) { text.unicodeScalars.append(alphabet[Int(random.next() % UInt64(alphabet.count))]) }
                bytes = Array(text.utf8)
                if !bytes.isEmpty, round % 4 == 1 { bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next()) }
            }
            Self.expectSame(bytes)
        }
    }
}
