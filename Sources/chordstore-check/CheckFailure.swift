/// A failure of the checker itself (not an anomaly it found).
struct CheckFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
