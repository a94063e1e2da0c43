import Hummingbird
import NIOCore

/// The web console's files, compiled into the binary (Package.swift embeds them): one
/// page, one script, one style sheet, served under `/console/` with a content security
/// policy that lets the page load only these and call only this server.
enum ConsoleAssets {
    /// Adds `GET /console/…` and a redirect from `/` to `router`.
    static func register(on router: Router<EndpointRequestContext>) {
        router.get("/") { _, _ in Response(status: .seeOther, headers: [.location: "/console/"]) }
        router.get("console/") { _, _ in file(PackageResources.index_html, "text/html; charset=utf-8") }
        router.get("console/console.js") { _, _ in file(PackageResources.console_js, "text/javascript; charset=utf-8") }
        router.get("console/console.css") { _, _ in file(PackageResources.console_css, "text/css; charset=utf-8") }
    }

    private static func file(_ bytes: [UInt8], _ type: String) -> Response {
        Response(
            status: .ok,
            headers: [
                .contentType: type,
                .cacheControl: "no-cache",
                .contentSecurityPolicy: "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
                .xContentTypeOptions: "nosniff",
                .init("Referrer-Policy")!: "no-referrer",
            ],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
