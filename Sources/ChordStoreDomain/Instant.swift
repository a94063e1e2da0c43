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

    /// ISO 8601 with microseconds, in UTC.
    public var description: String {
        let (seconds, nanos) = secondsAndNanos
        let base = Date(timeIntervalSince1970: Double(seconds))
            .formatted(.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: false).timeSeparator(.colon))
        return "\(base).\(String(format: "%06d", nanos / 1_000))Z"
    }
}
