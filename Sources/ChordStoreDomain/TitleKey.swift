import Foundation

/// The form of a title that title order and title filters compare: case-, diacritic- and
/// width-insensitive ("Éclair" and "eclair" are the same), compared by its UTF-8 bytes,
/// so that every engine and the LMDB title index agree on the order.
public enum TitleKey {
    /// The folded title.
    public static func fold(_ title: String) -> String {
        String(decoding: bytes(title), as: UTF8.self)
    }

    /// The folded title's UTF-8 bytes. ASCII titles (most) fold by lowering their
    /// letters, without Foundation's general folding.
    public static func bytes(_ title: String) -> [UInt8] {
        var ascii = true
        var lowered: [UInt8] = []
        lowered.reserveCapacity(title.utf8.count)
        for byte in title.utf8 {
            guard byte < 0x80 else {
                ascii = false
                break
            }
            lowered.append(byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte)
        }
        if ascii { return lowered }
        return Array(title.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil).utf8)
    }
}
