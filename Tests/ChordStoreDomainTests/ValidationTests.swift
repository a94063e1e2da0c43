import ChordStoreDomain
import Foundation
import Testing

/// One failing case and one passing boundary for every validation rule.
@Suite("Validation rules")
struct ValidationTests {
    let validation = Validation()

    private func expectInvalid(_ body: () throws -> Void, mentioning text: String) {
        do {
            try body()
            Issue.record("expected INVALID_ARGUMENT mentioning '\(text)'")
        } catch let error as ChordStoreError {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains(text), "message: \(error.message)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test("session and command id: NFC passes; a decomposed name fails (LMDB keys compare bytes)")
    func metadataNormalization() throws {
        try validation.checkMetadata("caf\u{E9}", name: "session")
        expectInvalid({ try validation.checkMetadata("cafe\u{301}", name: "session") }, mentioning: "NFC")
    }

    @Test("title: 200 characters pass, 201 fail")
    func titleCharacters() throws {
        try validation.checkTitle(String(repeating: "é", count: 200))
        expectInvalid({ try validation.checkTitle(String(repeating: "a", count: 201)) }, mentioning: "201 characters")
        // Characters of several bytes and scalars each are counted as characters.
        try validation.checkTitle(String(repeating: "e\u{301}", count: 200))
        expectInvalid({ try validation.checkTitle(String(repeating: "e\u{301}", count: 201)) }, mentioning: "201 characters")
    }

    @Test("title: 1000 UTF-8 bytes pass, 1001 fail even under 200 characters")
    func titleBytes() throws {
        let family = "👨‍👩‍👧‍👦"
        #expect(family.utf8.count == 25)
        try validation.checkTitle(String(repeating: family, count: 40))
        expectInvalid({ try validation.checkTitle(String(repeating: family, count: 40) + "x") }, mentioning: "1001 UTF-8 bytes")
    }

    @Test("title: empty and non-ASCII titles pass; control characters fail", arguments: ["\n", "\t", "\u{7F}", "\u{85}", "\u{2028}", "\u{0}"])
    func titleControlCharacters(control: String) throws {
        try validation.checkTitle("")
        try validation.checkTitle("Ünïcödé — ok ✓")
        expectInvalid({ try validation.checkTitle("bad\(control)title") }, mentioning: "control character")
    }

    @Test("bpm: 1 and 999 pass; just outside, NaN and infinity fail")
    func bpm() throws {
        try validation.checkBPM(1)
        try validation.checkBPM(999)
        for bad in [0.999, 999.001, 0, -60, .nan, .infinity] {
            expectInvalid({ try validation.checkBPM(bad) }, mentioning: "bpm")
        }
    }

    @Test("colour: 0 and 1 pass in every component; just outside or NaN fails, naming the component")
    func color() throws {
        try validation.checkColor(ChordColor(hue: 0, purity: 0, brightness: 0, alpha: 0))
        try validation.checkColor(ChordColor(hue: 1, purity: 1, brightness: 1, alpha: 1))
        let base = ChordColor(hue: 0.5, purity: 0.5, brightness: 0.5, alpha: 0.5)
        let cases: [(WritableKeyPath<ChordColor, Double>, String)] = [
            (\.hue, "hue"), (\.purity, "purity"), (\.brightness, "brightness"), (\.alpha, "alpha"),
        ]
        for (path, name) in cases {
            for bad in [-0.0001, 1.0001, Double.nan] {
                var color = base
                color[keyPath: path] = bad
                expectInvalid({ try validation.checkColor(color) }, mentioning: name)
            }
        }
    }

    @Test("position: 0 and 7 pass; -1 and 8 fail")
    func position() throws {
        try validation.checkPosition(0)
        try validation.checkPosition(7)
        expectInvalid({ try validation.checkPosition(-1) }, mentioning: "position -1")
        expectInvalid({ try validation.checkPosition(8) }, mentioning: "position 8")
    }

    @Test("creation date: years 1 and 9999 pass; beyond fails")
    func creationDate() throws {
        try validation.checkCreationDate(Instant(microsecondsSince1970: -62_135_596_800_000_000))
        try validation.checkCreationDate(Instant(microsecondsSince1970: 253_402_300_799_999_999))
        expectInvalid({ try validation.checkCreationDate(Instant(microsecondsSince1970: 253_402_300_800_000_000)) }, mentioning: "years")
    }

    @Test("session and command id: 128 bytes pass, 129 fail, control characters fail")
    func metadata() throws {
        try validation.checkMetadata(String(repeating: "s", count: 128), name: "session")
        expectInvalid({ try validation.checkMetadata(String(repeating: "s", count: 129), name: "session") }, mentioning: "129 UTF-8 bytes")
        expectInvalid({ try validation.checkMetadata("a\nb", name: "command id") }, mentioning: "control character")
    }
}
