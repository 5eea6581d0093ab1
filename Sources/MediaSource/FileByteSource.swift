import ByteSourceAPI
import FoundationEssentials
import Glibc
import Synchronization

/// Bytes of a local file, read with `pread`. Local reads are fast enough to
/// answer on the calling thread (as GStreamer's own filesrc does), so reads are
/// never pending.
public final class FileByteSource: ByteSource {
    private let path: String
    private let descriptor = Mutex<Int32>(-1)

    /// Creates a source for the file at `path`; nothing is opened until ``open(_:)``.
    public init(path: String) {
        self.path = path
    }

    /// Opens the file and reports its size. Only a regular file (or a link to one) is played: a
    /// FIFO, socket or device fails at once as "not a regular file". The open does not wait
    /// (`O_NONBLOCK`: a FIFO without a writer would block it forever); reads of a regular file
    /// never wait either way, and the flag is cleared once the file is known to be one.
    public func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let error = errno
            var status = stat()
            if stat(path, &status) == 0, ![S_IFREG, S_IFDIR].contains(status.st_mode & S_IFMT) {
                // A socket cannot be opened at all (ENXIO): it is no file to play either.
                completion(.failure(.gone("\(path): not a regular file")))
                return
            }
            errno = error
            let reason = "\(path): \(String(cString: strerror(errno)))"
            // A file that is not there, or that we may not read, stays so on a retry.
            let permanent = [ENOENT, ENOTDIR, EACCES, EISDIR, ELOOP, ENAMETOOLONG].contains(errno)
            completion(.failure(permanent ? .gone(reason) : .unavailable(reason)))
            return
        }
        var status = stat()
        guard fstat(fd, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            Glibc.close(fd)
            completion(.failure(.gone("\(path): not a regular file")))
            return
        }
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 else {
            let reason = "\(path): \(String(cString: strerror(errno)))"
            Glibc.close(fd)
            completion(.failure(.unavailable(reason)))
            return
        }
        descriptor.withLock { $0 = fd }
        completion(.success(ResourceInfo(length: Int64(status.st_size), randomAccess: true)))
    }

    /// Reads with `pread`; never pending.
    public func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        descriptor.withLock { fd in
            guard fd >= 0 else { return .failed(.closed) }
            var buffer = Data(count: maxLength)
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, maxLength, off_t(offset)) }
            if count < 0 { return .failed(.readFailed(String(cString: strerror(errno)))) }
            if count == 0 { return .endOfStream }
            buffer.count = count
            return .data(buffer)
        }
    }

    /// Nothing is ever pending for a file.
    public func cancelPendingReads() {}

    /// Closes the file.
    public func close() {
        descriptor.withLock { fd in
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }
    }

    deinit { close() }
}
