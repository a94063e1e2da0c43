public import ChordStoreDomain

/// How ``Replica/importCoreDataStore(at:options:)`` reads and maps a Core Data store.
public struct CoreDataImportOptions: Sendable {
    /// Read the store and report what an import would do, writing nothing.
    public var dryRun = false
    /// Image Performer's `RLColor` columns, named where their names do not say which
    /// component they hold: column (as the table names it, `ZSAT`, or as the model does,
    /// `sat`; any case) to component. Columns named `ZHUE`, `ZPURITY` or `ZSATURATION`,
    /// `ZBRIGHTNESS`, `ZALPHA` or `ZOPACITY` need no entry.
    public var colorColumns: [String: ChordColorField] = [:]
    /// How an Imager colour index becomes a colour; ``imagerHueWheel(_:)`` by default.
    public var imagerColor: @Sendable (Int) -> ChordColor = CoreDataImportOptions.imagerHueWheel
    /// The colour of a chord that has none (no `RLColor` row, a NULL index), and the
    /// components a NULL column of `RLColor` takes: opaque black by default.
    public var fillColor = ChordColor(hue: 0, purity: 0, brightness: 0, alpha: 1)

    /// The default options.
    public init() {}

    /// Imager's colour index as a colour: a step of a 360-step colour wheel (index
    /// modulo 360, negative indexes counted back from 360, divided by 360), fully
    /// saturated, bright and opaque. Imager used the index to give chords "some variety"
    /// before it had a colour model (seed 001); this keeps each index's colour apart.
    @Sendable public static func imagerHueWheel(_ index: Int) -> ChordColor {
        let step = ((index % 360) + 360) % 360
        return ChordColor(hue: Double(step) / 360, purity: 1, brightness: 1, alpha: 1)
    }
}
