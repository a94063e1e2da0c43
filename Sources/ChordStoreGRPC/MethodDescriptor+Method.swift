public import ChordStoreAPI
public import GRPCCore

extension MethodDescriptor {
    /// `method` as gRPC names it: the service and the method of its wire name
    /// (`chordstore.v1.ChordStore/AddChordset`).
    public init(_ method: ChordStoreAPI.Method) {
        let name = method.rawValue
        let slash = name.lastIndex(of: "/") ?? name.startIndex
        self.init(fullyQualifiedService: String(name[..<slash]), method: String(name[name.index(after: slash)...]))
    }
}
