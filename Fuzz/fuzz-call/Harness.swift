// libFuzzer harness: a Call frame body, then what the server does before the payload:
// the method's registry entry, the credentials in its metadata, and the permission check.
import FuzzSupport
import ChordStoreAPI
import ChordStoreDomain
import ChordStoreEngine
import ChordStoreProto
import ChordStoreServer
import ChordStoreWire
import Logging
import SwiftProtobuf

private let store = ChordStore.inMemory()
private let authenticator = Authenticator(
    store: store, mode: .tokens(localAdmin: "cs1.local-admin.fuzzfuzzfuzzfuzzfuzzfuzzfuzzfuzzfuzzfuzzfuz", clusterSecret: "fuzz-cluster-secret"),
    logger: Logger(label: "fuzz"))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCall(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let call = try? Chordstore_V1_Call(serializedBytes: Array(UnsafeBufferPointer(start: data, count: size))) else { return 0 }
    guard let method = Method(rawValue: call.method), let entry = ServiceDispatcher.registry[method] else { return 0 }
    if case .success(let principal) = authenticator.authenticate(call.metadata) {
        _ = principal.check(entry.permission, store: call.store)
    }
    if let token = call.metadata["authorization"] { _ = TokenSecret.id(of: String(token.dropFirst(min(7, token.count)))) }
    try? StoreName.check(StoreName.resolved(call.store))
    return 0
}

// SwiftPM's entry point of this executable: libFuzzer runs `fuzzCall`.
@_cdecl("fuzz_call_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runLibFuzzer(argc, argv) { data, size in fuzzCall(data, size) }
}
