// libFuzzer harness: the storage record decoder (a log record: an EventEnvelope with its
// checksum), as reading the log, verify and replication use it.
import FuzzSupport
import ChordStoreRecords

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRecord(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let record = UnsafeRawBufferPointer(start: data, count: size)
    _ = try? RecordCodec.decode(record, sequence: 1)
    _ = try? RecordCodec.decodeChecked(record)
    _ = try? RecordCodec.position(record, sequence: 1)
    _ = try? RecordCodec.verify(record, sequence: 1, previousChecksum: 0)
    _ = RecordCodec.storedChecksum(record)
    _ = try? RecordCodec.envelope(record, sequence: 1)
    return 0
}

// SwiftPM's entry point of this executable: libFuzzer runs `fuzzRecord`.
@_cdecl("fuzz_record_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runLibFuzzer(argc, argv) { data, size in fuzzRecord(data, size) }
}
