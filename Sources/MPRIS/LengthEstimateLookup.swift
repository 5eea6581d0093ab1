import Basics
import Dispatch
import FoundationEssentials
import Glibc
import PlayerCore

extension MPRISService {
    /// `snapshot` with an estimated length for a local MP3 whose length the engine has not
    /// reported (a constant-bitrate file without a Xing header, loaded paused). The file's head
    /// is read off the D-Bus and player threads and the published snapshot patched when it
    /// answers. Called with the published state locked.
    func withEstimatedLength(_ snapshot: PlayerSnapshot, _ state: inout Published) -> PlayerSnapshot {
        guard let track = snapshot.nowPlaying, track.duration == nil, track.entry.url.isFileURL,
            track.entry.url.pathExtension.lowercased() == "mp3"
        else { return snapshot }
        let id = track.entry.id
        if let known = state.estimatedLength, known.id == id {
            var patched = snapshot
            patched.nowPlaying?.duration = known.length
            return patched
        }
        guard state.estimatePending != id else { return snapshot }
        state.estimatePending = id
        let path = track.entry.url.path
        artQueue.async { [weak self] in
            let length = Self.estimateMP3Length(atPath: path)
            guard let self else { return }
            let changed = self.published.withLock { state -> Bool in
                state.estimatedLength = (id, length)
                guard let length, state.snapshot.nowPlaying?.entry.id == id, state.snapshot.nowPlaying?.duration == nil
                else { return false }
                state.snapshot.nowPlaying?.duration = length
                defer { state.flushScheduled = true }
                return !state.flushScheduled
            }
            if changed {
                self.log.debug(
                    "estimated the length of \(track.entry.url.lastPathComponent) from its bitrate: \(length!.forPeople)"
                )
                self.scheduleFlush()
            }
        }
        return snapshot
    }

    /// ``MP3Length`` of the file at `path`, reading its head and its last 128 bytes.
    static func estimateMP3Length(atPath path: String) -> Duration? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_size > 0 else { return nil }
        func read(_ count: Int, at offset: Int) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: count)
            let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
            return got > 0 ? Array(bytes.prefix(got)) : []
        }
        let size = Int(info.st_size)
        let head = read(min(size, MP3Length.headBytes), at: 0)
        let tail = size >= 128 ? read(128, at: size - 128) : []
        return MP3Length.estimate(head: head, tail: tail, fileSize: Int64(size))
    }
}
