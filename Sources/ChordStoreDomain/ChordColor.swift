import Foundation

/// A chord's background colour, in the seed apps' terms: hue, purity (saturation),
/// brightness and alpha, each in `0...1`.
public struct ChordColor: Sendable, Hashable, Codable {
    /// Hue, `0...1` (a full turn of the colour wheel).
    public var hue: Double
    /// Purity, the seed apps' name for saturation, `0...1`.
    public var purity: Double
    /// Brightness, `0...1`.
    public var brightness: Double
    /// Opacity, `0...1`.
    public var alpha: Double

    /// Creates a colour. Values are checked by ``Validation/checkColor(_:)`` when a command
    /// carries them, not here.
    public init(hue: Double, purity: Double, brightness: Double, alpha: Double = 1) {
        self.hue = hue
        self.purity = purity
        self.brightness = brightness
        self.alpha = alpha
    }

    /// A random opaque colour, as the seed app gave each new chord.
    @inlinable
    public static func random(using generator: inout some RandomNumberGenerator) -> ChordColor {
        // 53 random bits per component: uniform in [0, 1), without the generic
        // `Double.random(in:using:)` path, which dominated profiles of a batch of adds.
        func unit() -> Double { Double(generator.next() >> 11) * 0x1.0p-53 }
        return ChordColor(hue: unit(), purity: unit(), brightness: unit(), alpha: 1)
    }
}
