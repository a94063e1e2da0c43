import ChordStoreDomain
import ChordStoreEtcd
import Testing

/// `--coordinator` URLs: what parses, and what is refused with a clear message.
@Suite("etcd endpoints")
struct EtcdEndpointTests {
    @Test("http and https URLs with a host and a port; the port defaults to 2379; IPv6 in brackets")
    func parses() throws {
        let plain = try EtcdEndpoint(parsing: "http://127.0.0.1:2380")
        #expect(plain.host == "127.0.0.1" && plain.port == 2380 && !plain.usesTLS)
        let secure = try EtcdEndpoint(parsing: "https://etcd.example/")
        #expect(secure.host == "etcd.example" && secure.port == 2379 && secure.usesTLS)
        let six = try EtcdEndpoint(parsing: "http://[::1]:2381")
        #expect(six.host == "::1" && six.port == 2381 && six.description == "http://[::1]:2381")
        let list = try EtcdEndpoint.list(parsing: "http://a:1, http://b:2,,")
        #expect(list.map(\.description) == ["http://a:1", "http://b:2"])
    }

    @Test("anything else is INVALID_ARGUMENT naming the URL", arguments: [
        "127.0.0.1:2379", "ftp://a:1", "http://", "http://a:b", "http://a:0", "http://a:70000", "http://a:1/path", "http://u@a:1",
        "http://[::1", "",
    ])
    func refuses(_ text: String) {
        #expect(throws: ChordStoreError.self) { _ = try EtcdEndpoint.list(parsing: text) }
    }
}
