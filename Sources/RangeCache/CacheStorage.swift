import FoundationEssentials
import Glibc

/// Where the cache's data files live: the file system in production; in tests, a disk that
/// loses what was not synced when the power goes, against which the cache's durability rule
/// (data synced before the index claims it) is checked. Calls fail as POSIX calls do: with a
/// nil or negative result and `errno` set.
public protocol CacheStorage: Sendable {
    /// Creates the file at `path` (mode 0600), failing if it exists.
    func create(_ path: String) -> (any StoredFile)?
    /// Opens the existing file at `path`, for writing when `writable`.
    func open(_ path: String, writable: Bool) -> (any StoredFile)?
    /// Removes the file at `path` (nothing when it is missing).
    func remove(_ path: String)
    /// Makes the names of the files created in `directory` durable (fsync of the directory).
    func syncDirectory(_ directory: String)
    /// The names of the files in `directory`.
    func fileNames(in directory: String) -> Set<String>
}

/// An open file of a ``CacheStorage``; closed when released.
public protocol StoredFile: AnyObject, Sendable {
    /// Writes up to `bytes.count` bytes at `offset` (pwrite): how many, or -1.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Int
    /// Reads up to `buffer.count` bytes at `offset` (pread): how many (0 at the end), or -1.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Int
    /// Makes every byte written so far durable (fdatasync): 0, or -1.
    func sync() -> Int32
    /// The file's length, or nil when it cannot be told.
    var length: Int64? { get }
    /// Disk space the file occupies: allocated blocks, not its length.
    var allocatedBytes: Int64 { get }
}

/// The file system: the storage of every cache outside the tests.
public struct FileSystemStorage: CacheStorage {
    /// The file system storage.
    public init() {}

    public func create(_ path: String) -> (any StoredFile)? {
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        return fd < 0 ? nil : FileDescriptorFile(fd)
    }

    public func open(_ path: String, writable: Bool) -> (any StoredFile)? {
        let fd = Glibc.open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC)
        return fd < 0 ? nil : FileDescriptorFile(fd)
    }

    public func remove(_ path: String) { unlink(path) }

    public func syncDirectory(_ directory: String) {
        let fd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        Glibc.close(fd)
    }

    /// (readdir: several times faster than FileManager.)
    public func fileNames(in directory: String) -> Set<String> {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var names = Set<String>()
        while let item = readdir(stream) {
            let name = withUnsafeBytes(of: item.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != ".." { names.insert(name) }
        }
        return names
    }
}

/// A file of the file system, owning its descriptor.
final class FileDescriptorFile: StoredFile {
    let descriptor: Int32

    init(_ descriptor: Int32) { self.descriptor = descriptor }

    deinit { close(descriptor) }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Int {
        pwrite(descriptor, bytes.baseAddress, bytes.count, off_t(offset))
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Int {
        pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset))
    }

    func sync() -> Int32 { fdatasync(descriptor) }

    var length: Int64? {
        var status = stat()
        return fstat(descriptor, &status) == 0 ? Int64(status.st_size) : nil
    }

    var allocatedBytes: Int64 {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return 0 }
        return Int64(status.st_blocks) * 512
    }
}
