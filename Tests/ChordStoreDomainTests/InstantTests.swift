import ChordStoreDomain
import Foundation
import Testing

/// `Instant`'s text form: ISO 8601 on the proleptic Gregorian calendar, to the microsecond.
@Suite("Instant")
struct InstantTests {
    @Test("the text form of fixed instants, year 1 and 9999 included (Foundation's calendar turns Julian before 1582: year 1 read 0001-01-03)")
    func fixed() {
        let cases: [(Int64, String)] = [
            (0, "1970-01-01T00:00:00.000000Z"),
            (-1, "1969-12-31T23:59:59.999999Z"),
            (1_000_000 * 86_400 * 59 + 1, "1970-03-01T00:00:00.000001Z"),
            (951_782_400_000_000, "2000-02-29T00:00:00.000000Z"),
            (-62_135_596_800_000_000, "0001-01-01T00:00:00.000000Z"),
            (253_402_300_799_999_999, "9999-12-31T23:59:59.999999Z"),
            (-12_219_292_800_000_000 - 1, "1582-10-14T23:59:59.999999Z"),
            (-62_167_219_200_000_000 - 1, "-0001-12-31T23:59:59.999999Z"),
            (253_402_300_800_000_000, "+10000-01-01T00:00:00.000000Z"),
        ]
        // The extremes of Int64 format without trapping, as years with a sign.
        #expect(Instant(microsecondsSince1970: .min).description.wholeMatch(of: /-290308-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z/) != nil,
                "\(Instant(microsecondsSince1970: .min))")
        #expect(Instant(microsecondsSince1970: .max).description.wholeMatch(of: /\+294247-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z/) != nil,
                "\(Instant(microsecondsSince1970: .max))")
        for (micros, text) in cases {
            #expect(Instant(microsecondsSince1970: micros).description == text, "\(micros)")
        }
    }

    @Test("from 1583 to 9999 the text form is Foundation's (Gregorian there), for 2,000 random instants")
    func matchesFoundationWhereGregorian() {
        var generator = SystemRandomNumberGenerator()
        let from: Int64 = -12_212_553_600  // 1583-01-01
        let to: Int64 = 253_402_300_799  // 9999-12-31T23:59:59
        for _ in 0..<2_000 {
            let seconds = Int64.random(in: from...to, using: &generator)
            let micros = Int64.random(in: 0..<1_000_000, using: &generator)
            let instant = Instant(microsecondsSince1970: seconds * 1_000_000 + micros)
            let base = Date(timeIntervalSince1970: Double(seconds))
                .formatted(.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: false).timeSeparator(.colon))
            #expect(instant.description == "\(base).\(String(format: "%06d", micros))Z", "\(seconds)")
        }
    }

    @Test("consecutive days are consecutive dates (proleptic leap years) around year 1, 1582, 1970, 2000 and 9999")
    func consecutiveDays() throws {
        func parse(_ text: String) throws -> (year: Int, month: Int, day: Int) {
            let match = try #require(text.wholeMatch(of: /([+-]?\d{4,})-(\d{2})-(\d{2})T00:00:00\.000000Z/), "\(text)")
            return (try #require(Int(match.1)), try #require(Int(match.2)), try #require(Int(match.3)))
        }
        func next(_ date: (year: Int, month: Int, day: Int)) -> (year: Int, month: Int, day: Int) {
            let leap = date.year % 4 == 0 && (date.year % 100 != 0 || date.year % 400 == 0)
            let length = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][date.month - 1]
            if date.day < length { return (date.year, date.month, date.day + 1) }
            return date.month < 12 ? (date.year, date.month + 1, 1) : (date.year + 1, 1, 1)
        }
        for center: Int64 in [-719_162, -141_427, 0, 10_957, 2_932_896] {
            var expected = try parse(Instant(microsecondsSince1970: (center - 1_500) * 86_400_000_000).description)
            for day in (center - 1_499)...(center + 1_500) {
                expected = next(expected)
                let date = try parse(Instant(microsecondsSince1970: day * 86_400_000_000).description)
                #expect(date == expected, "day \(day)")
            }
        }
    }
}
