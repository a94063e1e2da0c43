/// A component of a ``ChordStoreDomain/ChordColor``: what a column of Image Performer's
/// `RLColor` holds.
public enum ChordColorField: String, Sendable, Hashable, CaseIterable {
    /// ``ChordStoreDomain/ChordColor/hue``.
    case hue
    /// ``ChordStoreDomain/ChordColor/purity`` (saturation).
    case purity
    /// ``ChordStoreDomain/ChordColor/brightness``.
    case brightness
    /// ``ChordStoreDomain/ChordColor/alpha``.
    case alpha
}
