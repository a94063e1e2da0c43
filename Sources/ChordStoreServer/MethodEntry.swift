package import ChordStoreAPI

/// One method's entry in the registry: its declaration and how the server runs it.
package struct MethodEntry: Sendable {
    /// The method.
    package let method: Method
    /// How the method runs.
    package let handler: MethodHandler

    /// What the caller must be allowed (checked before the payload is decoded): the
    /// declaration's, kept here so that admitting a call looks nothing up.
    package let permission: Permission

    /// The entry of `method`, run by `handler`.
    init(_ method: Method, _ handler: MethodHandler) {
        self.method = method
        self.handler = handler
        self.permission = method.spec.permission
    }
}
