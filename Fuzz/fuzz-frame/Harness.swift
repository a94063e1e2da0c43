// libFuzzer harness: the frame decoder, then each frame body as a chordstore.v1.Frame.
// Built by tools/fuzz only (CHORDSTORE_FUZZ=1, -sanitize=fuzzer,address).
import FuzzSupport
import ChordStoreAPI
import ChordStoreProto
import ChordStoreWire
import NIOCore
import SwiftProtobuf

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrame(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var buffer = ByteBuffer(bytes: UnsafeBufferPointer(start: data, count: size))
    var decoder = FrameDecoder(maxFrameSize: 1 << 16)
    while true {
        let body: ByteBuffer?
        do {
            body = try decoder.decode(buffer: &buffer)
        } catch {
            return 0
        }
        guard let body else { break }
        if let frame = try? Chordstore_V1_Frame(serializedBytes: Array(body.readableBytesView)) {
            // What the server reads of a frame first: its kind, and a call's method and metadata.
            if case .call(let call) = frame.kind {
                _ = Method(rawValue: call.method)
                _ = call.metadata.count
            }
        }
    }
    _ = try? decoder.decodeLast(buffer: &buffer, seenEOF: true)
    return 0
}

// SwiftPM's entry point of this executable: libFuzzer runs `fuzzFrame`.
@_cdecl("fuzz_frame_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runLibFuzzer(argc, argv) { data, size in fuzzFrame(data, size) }
}
