import FoundationEssentials
import Glibc

/// One resource's sparse data file: a 4 KiB header naming the file (so a file
/// put in another's place is recognised as foreign), then the resource's bytes,
/// each at its own offset past the header. Holes stay unallocated.
final class DataFile: Sendable {
    /// The open file; closed when the last reference goes away.
    let file: any StoredFile
    /// Whether the file was opened for writing.
    let writable: Bool

    /// Bytes before resource offset 0 (one page, so data stays page-aligned).
    static let headerSize: Int64 = 4096
    private static let magic = Array("SPOOLRC1".utf8)

    private init(file: any StoredFile, writable: Bool) {
        self.file = file
        self.writable = writable
    }

    /// Creates the file `name` in `directory` (mode 0600, failing if it exists) and writes its header.
    static func create(in directory: String, name: String, storage: any CacheStorage) throws(CacheError) -> DataFile {
        let path = directory + "/" + name
        guard let created = storage.create(path) else { throw CacheError.system("create \(name)", errno: errno) }
        let file = DataFile(file: created, writable: true)
        let failure = header(for: name).withUnsafeBytes { raw -> CacheError? in
            do throws(CacheError) { try file.writeAll(raw, atFileOffset: 0) } catch { return error }
            return nil
        }
        if let failure {
            storage.remove(path)
            throw failure
        }
        return file
    }

    /// Why an existing file cannot be trusted.
    enum Damage: Error {
        case missing
        case unreadable(Int32)
        case foreign
        case truncated(size: Int64)
    }

    /// Opens the existing file `name`, checks its header, and that it is long
    /// enough to hold bytes up to resource offset `end`. Opens read-only when
    /// `readOnly` or when the file system refuses writing.
    static func open(
        in directory: String, name: String, end: Int64, readOnly: Bool, storage: any CacheStorage
    ) throws(Damage) -> DataFile {
        let path = directory + "/" + name
        var writable = !readOnly
        var opened: (any StoredFile)?
        if writable {
            opened = storage.open(path, writable: true)
            if opened == nil, errno == EROFS || errno == EACCES || errno == EPERM { writable = false }
        }
        if !writable { opened = storage.open(path, writable: false) }
        guard let opened else { throw errno == ENOENT ? Damage.missing : Damage.unreadable(errno) }
        let file = DataFile(file: opened, writable: writable)
        var expected = header(for: name)
        var found = [UInt8](repeating: 0, count: expected.count)
        let count = found.withUnsafeMutableBytes { opened.read(into: $0, at: 0) }
        guard count == expected.count, found == expected else { throw Damage.foreign }
        expected = []
        guard let length = opened.length else { throw Damage.unreadable(errno) }
        guard length >= headerSize + end else {
            throw Damage.truncated(size: max(0, length - headerSize))
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
                file.write(UnsafeRawBufferPointer(rebasing: bytes[done...]), at: start + Int64(done))
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
                file.read(
                    into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]),
                    at: DataFile.headerSize + offset + Int64(done))
            }
            if count == 0 { break }
            done += count
        }
        return done
    }

    /// Makes every byte written so far durable (fdatasync).
    func sync() throws(CacheError) {
        try systemCall("fdatasync") { file.sync() }
    }

    /// Disk space the file occupies: allocated blocks, not its length.
    func allocatedBytes() -> Int64 { file.allocatedBytes }
}
