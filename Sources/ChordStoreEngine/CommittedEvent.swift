import ChordStoreRecords
public import ChordStoreDomain
/// A command's event as the writer committed it: the event, and its record as the log
/// holds it (a serialized `chordstore.v1.EventEnvelope` ending in its checksum field,
/// see ``RecordCodec``). A reply sends the record's bytes as they are, so an event is
/// encoded once, by the writer.
public struct CommittedEvent: Sendable {
    /// The event and its envelope.
    public var recorded: RecordedEvent
    /// The record's bytes: a valid `EventEnvelope` message.
    public var record: [UInt8]

    /// Pairs `recorded` with its record bytes.
    public init(recorded: RecordedEvent, record: [UInt8]) {
        self.recorded = recorded
        self.record = record
    }

    /// Pairs `recorded` with its record, encoded again (for an event read back from the
    /// log, as when a command id is repeated): the same bytes the writer stored.
    public init(recorded: RecordedEvent) {
        self.init(recorded: recorded, record: RecordCodec.record(of: recorded))
    }
}
