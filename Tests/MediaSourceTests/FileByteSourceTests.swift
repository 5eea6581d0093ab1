import ByteSourceAPI
import Foundation
import Glibc
import MediaSource
import TestSupport
import Testing

/// Only regular files are played: a FIFO, a socket or a device, given directly or through a
/// link, fails at open as "not a regular file", never waited on.
@Suite("Local files")
struct FileByteSourceTests {
    /// The result of opening `path`; a FIFO without a writer would block a plain open forever,
    /// so the open runs on a thread of its own and the test waits for it with a deadline.
    private func opened(_ path: String) async -> Result<ResourceInfo, MediaSourceError>? {
        let source = FileByteSource(path: path)
        defer { source.close() }
        let results = AwaitableLog<Result<ResourceInfo, MediaSourceError>>()
        Thread { source.open { result in Task { await results.append(result) } } }.start()
        guard await results.waitFor(timeout: .seconds(5), { !$0.isEmpty }) else { return nil }
        return await results.items.first
    }

    @Test func aFIFOASocketAndADeviceAreRefusedAtOnce() async throws {
        let dir = try TemporaryDirectory()
        let fifo = dir.file("pipe.mp3").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let socketPath = dir.file("socket.mp3").path
        let listener = try listeningUnixSocket(at: socketPath)
        defer { close(listener) }
        let device = dir.file("zero.mp3").path
        #expect(symlink("/dev/zero", device) == 0)
        let linkedFIFO = dir.file("link-to-pipe.mp3").path
        #expect(symlink(fifo, linkedFIFO) == 0)

        for path in [fifo, socketPath, device, linkedFIFO, "/dev/null"] {
            let result = await opened(path)
            guard case .failure(let error)? = result else {
                Issue.record("\(path): \(String(describing: result))")
                continue
            }
            #expect(error == .gone("\(path): not a regular file"), "\(path)")
        }
    }

    @Test func aRegularFileOpensAndReadsAsBefore() async throws {
        let dir = try TemporaryDirectory()
        let file = dir.file("a.mp3")
        try Data("0123456789".utf8).write(to: file)
        let link = dir.file("link.mp3").path
        #expect(symlink(file.path, link) == 0)
        for path in [file.path, link] {
            let result = await opened(path)
            #expect((try? result?.get())?.length == 10, "\(path): \(String(describing: result))")
        }
        let source = FileByteSource(path: file.path)
        defer { source.close() }
        let open = await withCheckedContinuation { continuation in source.open { continuation.resume(returning: $0) } }
        #expect((try? open.get()) != nil)
        #expect(source.read(at: 4, maxLength: 3) {} == .data(Data("456".utf8)))
    }
}
