import Foundation

/// Checks `condition` every 20 ms until it holds or `timeout` passes; returns whether it
/// held. For conditions no event announces (a server's counters, a child's memory).
public func eventually(timeout: Duration = .seconds(20), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(20))
    }
}

/// Flips one bit of `text` in `file`, in every copy of it (LMDB's copy-on-write leaves
/// older copies of pages in free pages); returns how many copies it changed.
@discardableResult
public func damage(_ text: String, in file: URL, atOffset offset: Int = 3) throws -> Int {
    var data = try Data(contentsOf: file)
    let needle = Data(text.utf8)
    var from = data.startIndex
    var flipped = 0
    while let range = data.range(of: needle, in: from..<data.endIndex) {
        data[range.lowerBound + offset] ^= 0x20
        from = range.upperBound
        flipped += 1
    }
    try data.write(to: file)
    return flipped
}
