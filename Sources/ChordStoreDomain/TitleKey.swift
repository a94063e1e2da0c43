public import Foundation

/// The form of a title that title order and title filters compare: case-, diacritic- and
/// width-insensitive ("Éclair" and "eclair" are the same), compared by its UTF-8 bytes,
/// so that every engine and the LMDB title index agree on the order.
public enum TitleKey {
    /// The folded title.
    public static func fold(_ title: String) -> String {
        title.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
    }

    /// The folded title's UTF-8 bytes.
    public static func bytes(_ title: String) -> [UInt8] { Array(fold(title).utf8) }
}
