import ChordStoreDomain
import Foundation

/// The rules for a row's values: tempo, colour, title, creation date.
extension CoreDataImportPlanner {
    mutating func bpm(_ chord: CoreDataFile.ChordRow) -> Double {
        guard let bpm = chord.bpm else {
            note(CoreDataEntity.chord, chord.pk, .bpmFilled, "its bpm is NULL (or not a number): it gets \(limits.defaultBPM.formatted())")
            return limits.defaultBPM
        }
        guard bpm.isFinite, bpm >= limits.minBPM, bpm <= limits.maxBPM else {
            note(
                CoreDataEntity.chord, chord.pk, .bpmFilled,
                "its bpm \(bpm) is outside \(limits.minBPM.formatted())...\(limits.maxBPM.formatted()): it gets \(limits.defaultBPM.formatted())")
            return limits.defaultBPM
        }
        return bpm
    }

    mutating func color(_ chord: CoreDataFile.ChordRow) -> ChordColor {
        switch file.model {
        case .imager:
            guard let index = chord.colorIndex else {
                note(CoreDataEntity.chord, chord.pk, .colorFilled, "its bgColor is NULL (or not an integer): it gets the fill colour")
                return options.fillColor
            }
            return fixed(options.imagerColor(Int(clamping: index)), chord: chord.pk, what: "colour index \(index)")
        case .imagePerformer:
            guard let pk = colorOfChord[chord.pk], let row = colors[pk] else {
                note(CoreDataEntity.chord, chord.pk, .colorFilled, "it has no RLColor: it gets the fill colour")
                return options.fillColor
            }
            var color = options.fillColor
            var nulls: [String] = []
            for field in ChordColorField.allCases {
                guard let value = row.component(field) else {
                    nulls.append(field.rawValue)
                    continue
                }
                switch field {
                case .hue: color.hue = value
                case .purity: color.purity = value
                case .brightness: color.brightness = value
                case .alpha: color.alpha = value
                }
            }
            if !nulls.isEmpty {
                note(CoreDataEntity.color, pk, .colorFixed, "its \(nulls.joined(separator: ", ")) \(nulls.count == 1 ? "is" : "are") NULL (or not numbers): the fill colour's taken")
            }
            return fixed(color, chord: pk, what: "its", entity: CoreDataEntity.color)
        }
    }

    /// A colour with each component clamped into 0...1 (a NaN takes the fill colour's).
    mutating func fixed(_ color: ChordColor, chord pk: Int64, what: String, entity: String = CoreDataEntity.chord) -> ChordColor {
        var fixed = color
        var changed: [String] = []
        func clamp(_ value: inout Double, _ fill: Double, _ name: String) {
            let clamped = value.isNaN ? fill : min(max(value, 0), 1)
            if clamped != value || value.isNaN {
                changed.append("\(name) \(value) → \(clamped)")
                value = clamped
            }
        }
        clamp(&fixed.hue, options.fillColor.hue, "hue")
        clamp(&fixed.purity, options.fillColor.purity, "purity")
        clamp(&fixed.brightness, options.fillColor.brightness, "brightness")
        clamp(&fixed.alpha, options.fillColor.alpha, "alpha")
        if !changed.isEmpty { note(entity, pk, .colorFixed, "\(what) \(changed.joined(separator: ", ")) (outside 0...1)") }
        return fixed
    }

    mutating func title(_ row: CoreDataFile.ChordsetRow) -> String {
        guard var title = row.title else {
            note(CoreDataEntity.chordset, row.pk, .titleFilled, "its title is NULL: it gets the empty title")
            return ""
        }
        if row.titleNotUTF8 {
            note(CoreDataEntity.chordset, row.pk, .titleCleaned, "its title's bytes are not UTF-8: each bad sequence became U+FFFD")
        }
        let forbidden = title.unicodeScalars.filter(Validation.isForbiddenInTitle)
        if !forbidden.isEmpty {
            title = String(String.UnicodeScalarView(title.unicodeScalars.map { Validation.isForbiddenInTitle($0) ? " " : $0 }))
            let named = Set(forbidden.map(\.value)).sorted().prefix(5).map { String(format: "U+%04X", $0) }
            note(CoreDataEntity.chordset, row.pk, .titleCleaned, "its title has control characters (\(named.joined(separator: ", "))): each became a space")
        }
        if title.count > limits.maxTitleCharacters || title.utf8.count > limits.maxTitleBytes {
            var cut = ""
            for character in title {
                guard cut.count < limits.maxTitleCharacters, cut.utf8.count + character.utf8.count <= limits.maxTitleBytes else { break }
                cut.append(character)
            }
            note(
                CoreDataEntity.chordset, row.pk, .titleTruncated,
                "its title is \(title.count) characters (\(title.utf8.count) bytes): cut to \(cut.count) (the store's limit is \(limits.maxTitleCharacters) characters, \(limits.maxTitleBytes) bytes)")
            title = cut
        }
        return title
    }

    /// Core Data's seconds since its reference date as an instant, if the store can keep it.
    func instant(_ seconds: Double?) -> Instant? {
        guard let seconds else { return nil }
        // Whole seconds and the fraction apart: a date far from 2001 has too few bits
        // left for microseconds in one product.
        guard seconds.isFinite, abs(seconds) < 1e13 else { return nil }
        let whole = seconds.rounded(.down)
        let offset = Int64(whole) * 1_000_000 + Int64(((seconds - whole) * 1_000_000).rounded())
        let (sum, overflow) = CoreDataImportPlan.referenceDate.microsecondsSince1970.addingReportingOverflow(offset)
        let instant = Instant(microsecondsSince1970: sum)
        guard !overflow, (try? Validation(limits: limits).checkCreationDate(instant)) != nil else { return nil }
        return instant
    }

    mutating func date(_ row: CoreDataFile.ChordsetRow) -> Instant {
        if let instant = instant(row.created) { return instant }
        if let seconds = row.created {
            note(CoreDataEntity.chordset, row.pk, .dateFilled, "its creationDate \(seconds) s after 2001 is outside years 1-9999: it gets 2001-01-01T00:00:00Z")
        } else {
            note(CoreDataEntity.chordset, row.pk, .dateFilled, "its creationDate is NULL (or not a number): it gets 2001-01-01T00:00:00Z (Core Data's reference date)")
        }
        return CoreDataImportPlan.referenceDate
    }
}
