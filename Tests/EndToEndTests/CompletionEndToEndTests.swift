import DBusKit
import Foundation
import TestSupport
import Testing

@testable import spool

/// bash's reply for `spool cache prefetch <TAB>` with the built spool, on `environment`'s bus.
private func completeCachedURLs(environment: [String: String]) throws -> (reply: String, result: CommandResult) {
    let folder = try TemporaryDirectory(prefix: "spool-bash")
    try completionScript(for: .bash).write(to: folder.file("spool.bash"), atomically: true, encoding: .utf8)
    let spool = try spoolExecutable()
    let result = try runShell(
        "bash",
        """
        source ./spool.bash
        COMP_WORDS=(\(shellQuoted(spool)) cache prefetch ''); COMP_CWORD=3; _spool
        printf '%s\\n' "${COMPREPLY[@]}"

        """, in: folder, environment: environment)
    return (result.stdout.trimmingCharacters(in: .whitespacesAndNewlines), result)
}

@Suite("Completions that ask the running daemon", .serialized)
struct CompletionEndToEndTests {
    @Test func cachedURLsAreOfferedFromTheRunningDaemonsCache() async throws {
        let (daemon, server, fixture) = try await daemonWithNginx(serving: .mp3CBR)
        let url = server.url(for: fixture.url.lastPathComponent).absoluteString
        let prefetched = try daemon.spool("cache", "prefetch", url)
        #expect(prefetched.status == 0, "\(prefetched)")
        let (reply, result) = try completeCachedURLs(environment: daemon.bus.environment)
        #expect(result.status == 0 && result.stderr.isEmpty, "\(result)")
        #expect(reply == url, "\(reply)")
    }

    @Test func completingNeverStartsTheDaemonThroughActivation() async throws {
        let activatable = try ActivatableBus()
        defer { withExtendedLifetime(activatable) {} }
        let started = ContinuousClock.now
        let (reply, result) = try completeCachedURLs(environment: activatable.bus.environment)
        #expect(result.status == 0 && result.stderr.isEmpty && reply.isEmpty, "\(result)")
        // A deadline: a completion waiting on an activation would wait for D-Bus's 25-s call timeout.
        #expect(ContinuousClock.now - started < .seconds(10), "the completion waited for the bus")
        let client = try DBusConnection(address: activatable.bus.address)
        defer { client.close() }
        #expect(try await client.nameHasOwner(busName) == false, "a completion started the daemon")
    }
}
