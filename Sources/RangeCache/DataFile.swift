import FoundationEssentials
import Glibc

/// One resource's sparse data file: a 4 KiB header naming the file (so a file
/// put in another's place is recognised as foreign), then the resource's bytes,
/// each at its own offset past the header. Holes stay unallocated.
final class DataFile: Sendable {
    /// The open descriptor; closed when the last reference goes away.
    let descriptor: Int32
    /// Whether the file was opened for writing.
    let writable: Bool

    /// Bytes before resource offset 0 (one page, so data stays page-aligned).
    static let headerSize: Int64 = 4096
    private static let magic = Array("SPOOLRC1".utf8)

    private init(descriptor: Int32, writable: Bool) {
        self.descriptor = descriptor
        self.writable = writable
    }

    deinit { close(descriptor) }

    /// Creates the file `name` in `directory` (mode 0600, failing if it exists) and writes its header.
    static func create(in directory: String, name: String) throws(CacheError) -> DataFile {
        let path = directory + "/" + name
        let fd = try systemCall("create \(name)") { Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) }
        let file = DataFile(descriptor: fd, writable: true)
        let failure = header(for: name).withUnsafeBytes { raw -> CacheError? in
            do throws(CacheError) { try file.writeAll(raw, atFileOffset: 0) } catch { return error }
            return nil
        }
        if let failure {
            unlink(path)
            throw failure
        }
        return file
    }

    /// Why an existing file cannot be trusted.
    enum Damage: Error {
        case missing, unreadable(Int32), foreign, truncated(size: Int64)
    }

    /// Opens the existing file `name`, checks its header, and that it is long
    /// enough to hold bytes up to resource offset `end`. Opens read-only when
    /// `readOnly` or when the file system refuses writing.
    static func open(in directory: String, name: String, end: Int64, readOnly: Bool) throws(Damage) -> DataFile {
        let path = directory + "/" + name
        var writable = !readOnly
        var fd: Int32 = -1
        if writable {
            fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
            if fd < 0, errno == EROFS || errno == EACCES || errno == EPERM { writable = false }
        }
        if !writable { fd = Glibc.open(path, O_RDONLY | O_CLOEXEC) }
        if fd < 0 { throw errno == ENOENT ? Damage.missing : Damage.unreadable(errno) }
        let file = DataFile(descriptor: fd, writable: writable)
        var expected = header(for: name)
        var found = [UInt8](repeating: 0, count: expected.count)
        let count = found.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count == expected.count, found == expected else { throw Damage.foreign }
        expected = []
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw Damage.unreadable(errno) }
        guard Int64(status.st_size) >= headerSize + end else {
            throw Damage.truncated(size: max(0, Int64(status.st_size) - headerSize))
        }
        return file
    }

    /// The header's first 128 bytes: magic, name length, name, zeros (names are ASCII, < 100 bytes).
    private static func header(for name: String) -> [UInt8] {
        let nameBytes = Array(name.utf8.prefix(100))
        return magic + [UInt8(nameBytes.count)] + nameBytes + [UInt8](repeating: 0, count: 119 - nameBytes.count)
    }

    /// Writes all of `bytes` at resource offset `offset` (pwrite).
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(CacheError) {
        try writeAll(bytes, atFileOffset: DataFile.headerSize + offset)
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer, atFileOffset start: Int64) throws(CacheError) {
        var done = 0
        while done < bytes.count {
            let written = try systemCall("write") {
                pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(start + Int64(done)))
            }
            done += written
        }
    }

    /// Reads up to `buffer.count` bytes at resource offset `offset` (pread);
    /// returns how many were read, fewer only at the end of the file.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(CacheError) -> Int {
        var done = 0
        while done < buffer.count {
            let count = try systemCall("read") {
                pread(descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(DataFile.headerSize + offset + Int64(done)))
            }
            if count == 0 { break }
            done += count
        }
        return done
    }

    /// Makes every byte written so far durable (fdatasync).
    func sync() throws(CacheError) {
        try systemCall("fdatasync") { fdatasync(descriptor) }
    }

    /// Disk space the file occupies: allocated blocks, not its length.
    func allocatedBytes() -> Int64 {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return 0 }
        return Int64(status.st_blocks) * 512
    }
}
