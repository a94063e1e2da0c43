import Foundation
import GRPCCore
import SwiftProtobuf

/// gRPC's server reflection (`grpc.reflection.v1.ServerReflection`, and the older
/// `v1alpha` name, whose messages are the same), so that `grpcurl list` and
/// `grpcurl describe` work without the protos: the services, and each proto's
/// descriptor with its imports. It needs no credential (the protos are public: they are
/// proto/ of the repository) and says nothing of the data.
struct ReflectionService: RegistrableRPCService {
    let index = DescriptorIndex.served

    func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
        let index = self.index
        for service in ["grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"] {
            router.registerHandler(
                forMethod: MethodDescriptor(fullyQualifiedService: service, method: "ServerReflectionInfo"),
                deserializer: RawMessageCoder(), serializer: RawMessageCoder()
            ) { request, _ in
                StreamingServerResponse { writer in
                    for try await message in request.messages {
                        let question: Grpc_Reflection_V1_ServerReflectionRequest
                        do {
                            question = try Grpc_Reflection_V1_ServerReflectionRequest(serializedBytes: message)
                        } catch {
                            throw RPCError(code: .invalidArgument, message: "not a ServerReflectionRequest: \(error)")
                        }
                        try await writer.write(try Self.answer(question, index).serializedBytes())
                    }
                    return [:]
                }
            }
        }
    }

    /// The response to one request.
    static func answer(_ request: Grpc_Reflection_V1_ServerReflectionRequest, _ index: DescriptorIndex) -> Grpc_Reflection_V1_ServerReflectionResponse {
        var response = Grpc_Reflection_V1_ServerReflectionResponse()
        response.validHost = request.host
        response.originalRequest = request
        func files(_ name: String?, _ missing: String) {
            let found = name.map(index.withImports) ?? []
            if found.isEmpty {
                response.errorResponse = .with {
                    $0.errorCode = Int32(RPCError.Code.notFound.rawValue)
                    $0.errorMessage = missing
                }
            } else {
                response.fileDescriptorResponse = .with { $0.fileDescriptorProto = found.map { Data($0) } }
            }
        }
        switch request.messageRequest {
        case .listServices:
            response.listServicesResponse = .with { list in list.service = index.services.map { name in .with { $0.name = name } } }
        case .fileByFilename(let name):
            files(name, "no file '\(name)'")
        case .fileContainingSymbol(let symbol):
            files(index.symbols[symbol.hasPrefix(".") ? String(symbol.dropFirst()) : symbol], "no symbol '\(symbol)'")
        case .fileContainingExtension(let asked):
            files(nil, "no extension \(asked.extensionNumber) of '\(asked.containingType)': the protos declare none")
        case .allExtensionNumbersOfType(let type):
            response.allExtensionNumbersResponse = .with { $0.baseTypeName = type }
        case nil:
            response.errorResponse = .with {
                $0.errorCode = Int32(RPCError.Code.invalidArgument.rawValue)
                $0.errorMessage = "the request asks for nothing"
            }
        }
        return response
    }
}
