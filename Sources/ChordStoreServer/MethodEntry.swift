package import ChordStoreAPI

/// One method's entry in the registry: its declaration and how the server runs it.
package struct MethodEntry: Sendable {
    /// The method.
    package let method: Method
    /// How the method runs.
    package let handler: MethodHandler

    /// The entry of `method`, run by `handler`.
    init(_ method: Method, _ handler: MethodHandler) {
        self.method = method
        self.handler = handler
    }

    /// What the caller must be allowed (checked before the payload is decoded).
    package var permission: Permission { method.spec.permission }
}
