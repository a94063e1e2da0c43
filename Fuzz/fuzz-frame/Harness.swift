// libFuzzer harness: the frame decoder, then each frame body as a chordstore.v1.Frame, read
// by hand and by SwiftProtobuf.
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
        // The server reads a frame by hand (ClientFrame) where it can: its reading must be
        // SwiftProtobuf's, for every input.
        let reference = (try? Chordstore_V1_Frame(serializedBytes: Array(body.readableBytesView))).map(ClientFrame.init)
        let read = try? ClientFrame(body)
        guard read == reference else { fatalError("ClientFrame read \(String(describing: read)), SwiftProtobuf \(String(describing: reference))") }
        if case .call(let call) = read {
            // What the server reads of a call first: its method and metadata.
            _ = Method(rawValue: call.method)
            _ = call.metadata.count
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
