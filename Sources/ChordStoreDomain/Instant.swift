public import Foundation

/// A point in time with microsecond resolution, stored as an integer so that it survives
/// every encoding (protobuf `Timestamp`, LMDB keys) exactly: replay must reproduce the
/// live state bit for bit, which `Date`'s floating point does not promise.
public struct Instant: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Microseconds since 1970-01-01T00:00:00Z (negative before).
    public var microsecondsSince1970: Int64

    /// Creates an instant from microseconds since 1970.
    public init(microsecondsSince1970: Int64) {
        self.microsecondsSince1970 = microsecondsSince1970
    }

    /// The instant nearest to `date`, rounded to the microsecond.
    public init(_ date: Date) {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        self.microsecondsSince1970 = micros.isFinite ? Int64(exactly: micros) ?? (micros < 0 ? .min : .max) : 0
    }

    /// The current time.
    public static var now: Instant { Instant(Date()) }

    /// The instant as a `Date`.
    public var date: Date { Date(timeIntervalSince1970: Double(microsecondsSince1970) / 1_000_000) }

    /// Whole seconds since 1970 (floored) and the nanoseconds within that second, as a
    /// protobuf `Timestamp` stores them.
    public var secondsAndNanos: (seconds: Int64, nanos: Int32) {
        var (seconds, micros) = microsecondsSince1970.quotientAndRemainder(dividingBy: 1_000_000)
        if micros < 0 {
            seconds -= 1
            micros += 1_000_000
        }
        return (seconds, Int32(micros * 1_000))
    }

    /// Creates an instant from protobuf `Timestamp` fields (nanoseconds are truncated to
    /// microseconds).
    public init(seconds: Int64, nanos: Int32) {
        self.microsecondsSince1970 = seconds &* 1_000_000 &+ Int64(nanos / 1_000)
    }

    public static func < (lhs: Instant, rhs: Instant) -> Bool {
        lhs.microsecondsSince1970 < rhs.microsecondsSince1970
    }

    /// ISO 8601 with microseconds, in UTC, on the proleptic Gregorian calendar (as RFC 3339
    /// and protobuf's `Timestamp` count; Foundation's calendar turns Julian before 1582).
    /// Years outside 0000...9999 are written with a sign (ISO 8601's expanded years).
    public var description: String {
        let (seconds, nanos) = secondsAndNanos
        let (days, second) = Self.floorDivision(seconds, 86_400)
        let (year, month, day) = Self.civilDate(daysSince1970: days)
        let yearText = (0...9999).contains(year) ? Self.padded(year, 4) : (year < 0 ? "-" : "+") + Self.padded(year.magnitude, 4)
        return "\(yearText)-\(Self.padded(month, 2))-\(Self.padded(day, 2))T\(Self.padded(second / 3_600, 2)):"
            + "\(Self.padded(second / 60 % 60, 2)):\(Self.padded(second % 60, 2)).\(Self.padded(Int64(nanos / 1_000), 6))Z"
    }

    /// `value / divisor` rounded down, and the remainder (0 ..< divisor).
    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let (quotient, remainder) = value.quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }

    /// The proleptic Gregorian year, month and day of a day counted from 1970-01-01, by
    /// whole 400-year eras of 146,097 days (H. Hinnant's `civil_from_days`).
    static func civilDate(daysSince1970: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let (era, dayOfEra) = floorDivision(daysSince1970 + 719_468, 146_097)
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // 0 = March
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func padded<T: BinaryInteger>(_ value: T, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
