import Foundation
import Glibc
import RangeCache
import Synchronization
import TestSupport

/// A disk that keeps the cache's data files in memory and loses, at a simulated power cut,
/// what the page cache held: each write since its file's last sync is kept, dropped, or torn
/// at a page boundary, independently (the kernel writes pages back in any order), and a file
/// whose name was never made durable (directory sync) may vanish. In the spirit of LevelDB's
/// fault-injection environment. The SQLite index stays on the real disk with WAL's own
/// guarantees.
final class PowerCutStorage: CacheStorage {
    struct File {
        var id: Int
        /// What reads see: the durable bytes with every later write applied.
        var current: [UInt8] = []
        /// What survives a power cut for certain: the bytes at the last sync.
        var durable: [UInt8] = []
        /// Writes since the last sync, in order.
        var pending: [(offset: Int, bytes: [UInt8])] = []
        var nameDurable = false
    }

    struct State {
        var files: [String: File] = [:]
        var nextID = 0
        /// Set from the cut until ``restore(_:)``: the machine is off, every call fails.
        var off = false
    }

    let state = Mutex(State())

    /// Cuts the power: from now on every write, sync and create fails with EIO.
    func cutPower() { state.withLock { $0.off = true } }

    /// Powers the disk on again, with what a power cut left of each file. Returns the bytes lost.
    @discardableResult
    func restore(_ generator: inout SeededGenerator) -> Int {
        state.withLock { state in
            var lost = 0
            for (path, var file) in state.files {
                if !file.nameDurable, generator.next(below: 2) == 0 {
                    state.files[path] = nil
                    lost += file.current.count
                    continue
                }
                var survived = file.durable
                for write in file.pending {
                    let kept: Int
                    switch generator.next(below: 3) {
                    case 0: kept = write.bytes.count
                    case 1: kept = 0
                    default:
                        // Torn: the pages up to a random page boundary inside the write reached the disk.
                        let firstBoundary = (write.offset / 4096 + 1) * 4096 - write.offset
                        let boundaries = Array(stride(from: firstBoundary, to: write.bytes.count, by: 4096))
                        kept = boundaries.isEmpty ? 0 : boundaries[generator.next(below: boundaries.count)]
                    }
                    lost += write.bytes.count - kept
                    guard kept > 0 else { continue }
                    if survived.count < write.offset + kept {
                        survived += [UInt8](repeating: 0, count: write.offset + kept - survived.count)
                    }
                    survived.replaceSubrange(write.offset..<(write.offset + kept), with: write.bytes[..<kept])
                }
                file.durable = survived
                file.current = survived
                file.pending = []
                file.nameDurable = true
                state.files[path] = file
            }
            state.off = false
            return lost
        }
    }

    func create(_ path: String) -> (any StoredFile)? {
        state.withLock { state -> (any StoredFile)? in
            guard !state.off else {
                errno = EIO
                return nil
            }
            guard state.files[path] == nil else {
                errno = EEXIST
                return nil
            }
            state.nextID += 1
            state.files[path] = File(id: state.nextID)
            return MemoryFile(storage: self, path: path, id: state.nextID)
        }
    }

    func open(_ path: String, writable: Bool) -> (any StoredFile)? {
        state.withLock { state -> (any StoredFile)? in
            guard let file = state.files[path] else {
                errno = ENOENT
                return nil
            }
            return MemoryFile(storage: self, path: path, id: file.id)
        }
    }

    func remove(_ path: String) {
        state.withLock { state in
            guard !state.off else { return }
            state.files[path] = nil
        }
    }

    func syncDirectory(_ directory: String) {
        state.withLock { state in
            guard !state.off else { return }
            for path in state.files.keys where path.hasPrefix(directory + "/") { state.files[path]!.nameDurable = true }
        }
    }

    func fileNames(in directory: String) -> Set<String> {
        state.withLock { state in
            Set(
                state.files.keys.filter { $0.hasPrefix(directory + "/") }.map {
                    String($0.dropFirst(directory.count + 1))
                })
        }
    }

    /// Runs `body` on the file behind a handle, if that file still exists (a removed file's
    /// handle reads and writes a file nobody will see again, as an unlinked inode).
    fileprivate func withFile<T>(_ path: String, _ id: Int, _ body: (inout File, Bool) -> T) -> T? {
        state.withLock { state in
            guard var file = state.files[path], file.id == id else { return nil }
            defer { state.files[path] = file }
            return body(&file, state.off)
        }
    }
}

/// A handle on a file of a ``PowerCutStorage``.
private final class MemoryFile: StoredFile {
    let storage: PowerCutStorage
    let path: String
    let id: Int

    init(storage: PowerCutStorage, path: String, id: Int) {
        self.storage = storage
        self.path = path
        self.id = id
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Int {
        let result = storage.withFile(path, id) { file, off -> Int in
            guard !off else { return -1 }
            let start = Int(offset)
            if file.current.count < start + bytes.count {
                file.current += [UInt8](repeating: 0, count: start + bytes.count - file.current.count)
            }
            file.current.replaceSubrange(start..<(start + bytes.count), with: bytes)
            file.pending.append((start, Array(bytes)))
            return bytes.count
        }
        if result == -1 { errno = EIO }
        return result ?? bytes.count
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Int {
        storage.withFile(path, id) { file, _ -> Int in
            let start = Int(offset)
            guard start < file.current.count else { return 0 }
            let count = min(buffer.count, file.current.count - start)
            file.current.withUnsafeBytes {
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[start..<(start + count)]))
            }
            return count
        } ?? 0
    }

    func sync() -> Int32 {
        let result = storage.withFile(path, id) { file, off -> Int32 in
            guard !off else { return -1 }
            file.durable = file.current
            file.pending = []
            return 0
        }
        if result == -1 { errno = EIO }
        return result ?? 0
    }

    var length: Int64? { storage.withFile(path, id) { file, _ in Int64(file.current.count) } ?? 0 }

    var allocatedBytes: Int64 { length ?? 0 }
}
