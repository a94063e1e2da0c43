import ChordStoreDomain

/// An event of the store's feed, as the replica stores it: the server's record byte for
/// byte, the chain seed it came with (`nil` from a server older than `with_chain_seeds`)
/// and its decoding.
struct CopiedEvent: Sendable {
    let sequence: UInt64
    let bytes: [UInt8]
    let seed: UInt64?
    let recorded: RecordedEvent
}
