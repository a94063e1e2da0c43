import Foundation

/// The validation rules, one function each. Every function throws
/// ``ChordStoreError/Code/invalidArgument`` with a message naming the rule and its limit.
public struct Validation: Sendable {
    /// The limits the rules enforce.
    public var limits: Limits

    /// Creates a validator for `limits`.
    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// A title: at most ``Limits/maxTitleCharacters`` characters and
    /// ``Limits/maxTitleBytes`` UTF-8 bytes, with no control characters
    /// (C0, DEL, C1, or the line and paragraph separators). Empty titles are allowed.
    public func checkTitle(_ title: String) throws(ChordStoreError) {
        if title.utf8.count > limits.maxTitleBytes {
            throw ChordStoreError(
                .invalidArgument,
                "title is \(title.utf8.count) UTF-8 bytes; the limit is \(limits.maxTitleBytes)")
        }
        // A title has no more characters than UTF-8 bytes: count them (grapheme by
        // grapheme, the slow part) only when the bytes alone could be too many.
        if title.utf8.count > limits.maxTitleCharacters {
            let characters = title.count
            if characters > limits.maxTitleCharacters {
                throw ChordStoreError(
                    .invalidArgument,
                    "title is \(characters) characters; the limit is \(limits.maxTitleCharacters)")
            }
        }
        for (offset, scalar) in title.unicodeScalars.enumerated() where Self.isForbiddenInTitle(scalar) {
            let hex = String(scalar.value, radix: 16, uppercase: true)
            throw ChordStoreError(
                .invalidArgument,
                "title contains control character U+\(String(repeating: "0", count: max(0, 4 - hex.count)))\(hex) at scalar offset \(offset)")
        }
    }

    /// A tempo: finite and within ``Limits/minBPM``...``Limits/maxBPM``.
    public func checkBPM(_ bpm: Double) throws(ChordStoreError) {
        guard bpm.isFinite, bpm >= limits.minBPM, bpm <= limits.maxBPM else {
            throw ChordStoreError(
                .invalidArgument,
                "bpm \(bpm) is outside \(limits.minBPM.formatted())...\(limits.maxBPM.formatted())")
        }
    }

    /// A colour: every component finite and within `0...1`.
    public func checkColor(_ color: ChordColor) throws(ChordStoreError) {
        let components = [
            ("hue", color.hue), ("purity", color.purity),
            ("brightness", color.brightness), ("alpha", color.alpha),
        ]
        for (name, value) in components where !(value.isFinite && value >= 0 && value <= 1) {
            throw ChordStoreError(.invalidArgument, "colour \(name) \(value) is outside 0...1")
        }
    }

    /// A chord position: `0..<Chordset.chordCount`.
    public func checkPosition(_ position: Int) throws(ChordStoreError) {
        guard (0..<Chordset.chordCount).contains(position) else {
            throw ChordStoreError(
                .invalidArgument,
                "chord position \(position) is outside 0...\(Chordset.chordCount - 1)")
        }
    }

    /// A creation date: representable as a protobuf `Timestamp` (years 1 to 9999).
    public func checkCreationDate(_ date: Instant) throws(ChordStoreError) {
        let range: ClosedRange<Int64> = -62_135_596_800_000_000...253_402_300_799_999_999
        guard range.contains(date.microsecondsSince1970) else {
            throw ChordStoreError(.invalidArgument, "creation date \(date.microsecondsSince1970) µs is outside years 1...9999")
        }
    }

    /// Command metadata (session name, command id): at most ``Limits/maxMetadataBytes``
    /// UTF-8 bytes and no control characters.
    public func checkMetadata(_ value: String, name: String) throws(ChordStoreError) {
        if value.utf8.count > limits.maxMetadataBytes {
            throw ChordStoreError(
                .invalidArgument,
                "\(name) is \(value.utf8.count) UTF-8 bytes; the limit is \(limits.maxMetadataBytes)")
        }
        if value.unicodeScalars.contains(where: Self.isForbiddenInTitle) {
            throw ChordStoreError(.invalidArgument, "\(name) contains a control character")
        }
        // Swift compares strings by canonical equivalence, LMDB keys by bytes: requiring
        // NFC makes the two agree, so one session is never two sets of stacks.
        if !value.utf8.allSatisfy({ $0 < 0x80 }),  // ASCII is NFC; the mapping costs ~1 µs
           !value.utf8.elementsEqual(value.precomposedStringWithCanonicalMapping.utf8) {
            throw ChordStoreError(.invalidArgument, "\(name) is not in Unicode normalization form C (NFC)")
        }
    }

    /// Whether `scalar` may not appear in a title: a control character (C0, DEL, C1) or
    /// the line or paragraph separator.
    public static func isForbiddenInTitle(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029: true
        default: false
        }
    }
}
