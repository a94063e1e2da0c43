public import Foundation

extension UUID {
    /// A time-ordered version-7 UUID (RFC 9562): 48 bits of Unix milliseconds from
    /// `instant`, then 74 bits from `generator`.
    ///
    /// The store gives new chordsets and chords these ids because B-tree indexes keyed by
    /// them grow at their right edge: a batch of adds dirties a few pages instead of one
    /// random page per id, which is what makes group commit pay off on disk.
    public static func version7(at instant: Instant, using generator: inout some RandomNumberGenerator) -> UUID {
        let milliseconds = UInt64(clamping: max(0, instant.microsecondsSince1970 / 1_000))
        let random = (generator.next(), generator.next())
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { raw in
            for i in 0..<6 { raw[i] = UInt8(truncatingIfNeeded: milliseconds >> (8 * (5 - UInt64(i)))) }
            withUnsafeBytes(of: random) { source in
                for i in 6..<16 { raw[i] = source[i] }
            }
            raw[6] = 0x70 | (raw[6] & 0x0F)
            raw[8] = 0x80 | (raw[8] & 0x3F)
        }
        return UUID(uuid: bytes)
    }
}
