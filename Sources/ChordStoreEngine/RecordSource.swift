/// Something that yields stored log records in order: a snapshot, or a backend's whole
/// log (``LogRecords``).
protocol RecordSource {
    /// Calls `body` with each record from `sequence` on, until it returns `false`.
    func forEachRecord(from sequence: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws
}

/// A backend's log, including records its views have not folded yet.
struct LogRecords: RecordSource {
    let backend: any StorageBackend

    func forEachRecord(from sequence: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        try backend.forEachLogRecord(from: sequence, body)
    }
}
