// libFuzzer harness: request payload → command (the registry's parse of each command
// method) and the point reads, against an in-memory store. The first byte picks the
// method, the rest is its payload.
import FuzzSupport
import ChordStoreAPI
import ChordStoreEngine
import ChordStoreServer
import ChordStoreWire
import Foundation

private let dispatcher = ServiceDispatcher(store: ChordStore.inMemory(), node: "fuzz")
private let methods = Method.allCases

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCommand(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let method = methods[Int(data[0]) % methods.count]
    let payload = Data(bytes: data + 1, count: size - 1)
    switch ServiceDispatcher.registry[method]?.handler {
    case .command(let parse):
        _ = try? parse(dispatcher, .bytes(payload))
    case .pointRead(let read):
        _ = try? read(dispatcher, .bytes(payload), CallContext(session: "fuzz", peerAddress: ""))
    default:
        break
    }
    return 0
}

// SwiftPM's entry point of this executable: libFuzzer runs `fuzzCommand`.
@_cdecl("fuzz_command_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runLibFuzzer(argc, argv) { data, size in fuzzCommand(data, size) }
}
