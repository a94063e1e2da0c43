import ChordStoreDomain
import LMDB

extension ChordStoreError {
    /// `error` itself if it is a ``ChordStoreError``; `resourceExhausted` for a full disk
    /// (a condition the operator can clear; nothing was written); otherwise an `internal`
    /// error that keeps it as the cause.
    static func wrapping(_ error: any Error) -> ChordStoreError {
        if let error = error as? ChordStoreError { return error }
        if let lmdb = error as? LMDBError {
            if lmdb.isDiskFull { return diskFull(lmdb) }
            return ChordStoreError(.internal, "storage failure: \(lmdb)", cause: lmdb)
        }
        return ChordStoreError(.internal, "\(error)", cause: error)
    }

    /// The refusal of a write the disk has no room for.
    static func diskFull(_ cause: LMDBError) -> ChordStoreError {
        ChordStoreError(
            .resourceExhausted,
            "the disk is full (\(cause.operation): \(cause.message)); nothing was written. Writes resume once space is freed; reads go on",
            reason: .diskFull, cause: cause)
    }
}
