// libFuzzer harness: the storage record decoder (a log record: an EventEnvelope with its
// checksum), as reading the log, verify and replication use it.
import ChordStoreEngine

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

// SwiftPM links an executable's entry point as `<module>_main`: hand libFuzzer the run.
@_cdecl("fuzz_record_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzRecord(data, size) }
}

@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt
