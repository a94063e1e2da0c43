/// How the live state was built when its store opened (``LMDBBackend/liveStart``).
enum LiveStart: Sendable, Equatable {
    /// From the state saved last (``LiveStateFile``: at a close or in the background), of the log up to event
    /// `at`, then the log's `replayed` later events.
    case saved(at: UInt64, replayed: UInt64)
    /// From a replay of the whole log; `setAside` says why a saved state was not used
    /// (`nil`: there was none).
    case replayed(setAside: String?)
}
