import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO

/// Why a server's certificate was refused, in the words of libpq's reasons: not for the host
/// name, expired or not valid yet, or signed by no certificate authority winnow trusts. The
/// TLS library says only that verification failed; winnow then makes a second handshake that
/// keeps the server's certificate instead of judging it, and reads its dates.
enum PostgresTLSDiagnosis {
    /// The reason `error` (a failed connection) names, when it is a refused certificate.
    static func reason(_ error: Error, _ location: PostgresLocation) -> String? {
        var failure: Error = error
        while let wrapped = (failure as? PSQLError)?.underlying { failure = wrapped }
        if let extra = failure as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return "the server's certificate is not for the host name '\(location.host)' (sslmode=\(location.sslMode.rawValue))"
        }
        guard let ssl = failure as? NIOSSLError, case .handshakeFailed = ssl, "\(ssl)".contains("CERTIFICATE_VERIFY_FAILED") else {
            return nil
        }
        let trusted = location.sslRootCert.map { $0 == "system" ? "the system's trust store" : $0 } ?? "the system's trust store"
        guard let certificate = serverCertificate(location) else {
            return "the server's certificate could not be verified against \(trusted)"
        }
        let now = time(nil)
        let day = { (seconds: time_t) in
            ISO8601DateFormatter.string(
                from: Date(timeIntervalSince1970: TimeInterval(seconds)), timeZone: TimeZone(identifier: "UTC")!,
                formatOptions: [.withFullDate])
        }
        if certificate.notValidAfter < now { return "the server's certificate expired on \(day(certificate.notValidAfter))" }
        if certificate.notValidBefore > now { return "the server's certificate is not valid before \(day(certificate.notValidBefore))" }
        return "the server's certificate is not signed by a certificate authority in \(trusted) (unknown CA)"
    }

    /// The server's certificate, from a handshake that verifies nothing (nil when none came).
    static func serverCertificate(_ location: PostgresLocation) -> NIOSSLCertificate? {
        guard !location.isUnixSocket else { return nil }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        var settings = TLSConfiguration.makeClientConfiguration()
        settings.certificateVerification = .none
        guard let context = try? NIOSSLContext(configuration: settings) else { return nil }
        let done = group.next().makePromise(of: NIOSSLCertificate?.self)
        let host = location.host
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(.seconds(Int64(location.connectTimeout ?? PostgresLink.checkTimeout)))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(SSLRequest(context: context, host: host, done: done))
                }
            }
        let connected = bootstrap.connect(host: location.host, port: location.port)
        connected.whenFailure { done.fail($0) }  // (before the handler exists: nothing else completes it)
        defer { connected.whenSuccess { _ = $0.close() } }
        return (try? PostgresLink.wait(done.futureResult, seconds: TimeInterval(location.connectTimeout ?? PostgresLink.checkTimeout)))
            ?? nil
    }

    /// Asks the server for TLS (PostgreSQL's `SSLRequest`), then shakes hands and hands over
    /// the server's certificate.
    final class SSLRequest: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        let context: NIOSSLContext
        let host: String
        let done: EventLoopPromise<NIOSSLCertificate?>
        var asked = false
        /// Whether `done` is complete (a promise is completed once; everything runs on the
        /// channel's event loop).
        var finished = false

        init(context: NIOSSLContext, host: String, done: EventLoopPromise<NIOSSLCertificate?>) {
            self.context = context
            self.host = host
            self.done = done
        }

        func channelActive(context: ChannelHandlerContext) {
            var request = context.channel.allocator.buffer(capacity: 8)
            request.writeInteger(UInt32(8))
            request.writeInteger(UInt32(80_877_103))
            context.writeAndFlush(NIOAny(request), promise: nil)
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !asked else { return context.fireChannelRead(data) }
            asked = true
            var answer = unwrapInboundIn(data)
            guard answer.readInteger(as: UInt8.self) == UInt8(ascii: "S") else { return finish(.success(nil)) }
            do {
                let name = host.first?.isLetter == true ? host : nil
                // The certificates arrive in the verification callback: kept, and accepted.
                let tls = try NIOSSLClientHandler(context: self.context, serverHostname: name) { certificates, verdict in
                    self.finish(.success(certificates.first))
                    verdict.succeed(.certificateVerified)
                }
                try context.pipeline.syncOperations.addHandler(tls, position: .first)
            } catch {
                finish(.failure(error))
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: Error) { finish(.failure(error)) }

        func channelInactive(context: ChannelHandlerContext) {
            finish(.success(nil))
            context.fireChannelInactive()
        }

        func finish(_ result: Result<NIOSSLCertificate?, Error>) {
            guard !finished else { return }
            finished = true
            done.completeWith(result)
        }
    }
}
