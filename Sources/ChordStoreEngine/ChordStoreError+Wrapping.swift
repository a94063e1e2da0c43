import ChordStoreDomain
import LMDB

extension ChordStoreError {
    /// `error` itself if it is a ``ChordStoreError``; otherwise an `internal` error that
    /// keeps it as the cause.
    static func wrapping(_ error: any Error) -> ChordStoreError {
        if let error = error as? ChordStoreError { return error }
        if let lmdb = error as? LMDBError {
            return ChordStoreError(.internal, "storage failure: \(lmdb)", cause: lmdb)
        }
        return ChordStoreError(.internal, "\(error)", cause: error)
    }
}
