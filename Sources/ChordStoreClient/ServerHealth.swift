/// What a server says of itself (`Health`, which needs no credential).
public struct ServerHealth: Sendable, Hashable {
    /// Its name and version (`chordstore 0.1.0`).
    public var server: String
    /// The protocol version it speaks (1).
    public var protocolVersion: UInt32
    /// Its node's name.
    public var node: String
    /// Store `default`'s last event, for a caller that may read it (else 0).
    public var lastSequence: UInt64
    /// The leader's `HOST:PORT` as it knows it, for a caller with a credential (`nil`:
    /// none known now, or not replicated).
    public var leader: String?
    /// Its epoch, for a caller with a credential.
    public var epoch: UInt64
}
