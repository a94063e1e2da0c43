import ChordStoreDomain
import Foundation
import Testing

/// The folded title order: the ASCII fast path agrees with Foundation's folding.
@Suite("Title keys")
struct TitleKeyTests {
    static func foundationFold(_ title: String) -> [UInt8] {
        Array(title.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil).utf8)
    }

    @Test("every printable ASCII title folds as Foundation folds it; non-ASCII goes through Foundation")
    func agreesWithFoundation() {
        var g = SplitMix64(seed: 4)
        for _ in 0..<2_000 {
            let title = String((0..<Int(g.next() % 30)).map { _ in Character(Unicode.Scalar(UInt8(0x20 + g.next() % 95))) })
            #expect(TitleKey.bytes(title) == Self.foundationFold(title), "\(title)")
        }
        for title in ["Éclair", "ＡＢ", "Straße", "ÇA", "naïve Café"] {
            #expect(TitleKey.bytes(title) == Self.foundationFold(title))
        }
        #expect(TitleKey.fold("ÉCLAIR") == "eclair")
    }
}
