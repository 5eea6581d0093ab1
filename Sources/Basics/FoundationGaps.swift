import Glibc

// The daemon imports FoundationEssentials, never Foundation: Foundation drags in
// libFoundation, FoundationInternationalization and the ICU data, megabytes of
// resident memory that a headless player has no use for. These are
// the few things Spool used from Foundation that FoundationEssentials lacks.
// They live here because Basics is the one module every layer may import.

/// Starts a detached thread named `name` that runs `body`, as Foundation's
/// `Thread` did. Linux keeps 15 bytes of a thread name; the rest is cut.
/// (Glibc does not export `pthread_setname_np` to Swift: the name is written
/// to `/proc/thread-self/comm`, which is what that function does.)
public func startThread(name: String, _ body: @escaping @Sendable () -> Void) {
    let box = Unmanaged.passRetained(ThreadBody(name: name, body: body)).toOpaque()
    var thread = pthread_t()
    let status = pthread_create(&thread, nil, ThreadBody.entry, box)
    // Without a thread the process cannot work: as Foundation's Thread.start() does, stop here.
    precondition(status == 0, "pthread_create failed: \(String(cString: strerror(status)))")
    pthread_detach(thread)
}

/// The kernel's id of the calling thread (its `/proc/self/task` entry), as `gettid()` gives it
/// in C; nil if `/proc` cannot tell. (Glibc's `gettid` is not exported to Swift either.)
public func currentThreadID() -> Int32? {
    var link = [CChar](repeating: 0, count: 64)
    let count = readlink("/proc/thread-self", &link, link.count - 1)
    guard count > 0 else { return nil }
    // "PID/task/TID"
    return String(decoding: link[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        .split(separator: "/").last.flatMap { Int32($0) }
}

/// What a thread started by ``startThread(name:_:)`` runs; owned by that thread.
private final class ThreadBody {
    let name: String
    let body: @Sendable () -> Void

    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }

    static let entry: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { context in
        let thread = Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue()
        let name = Array(thread.name.utf8.prefix(15))
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        if fd >= 0 {
            _ = write(fd, name, name.count)
            close(fd)
        }
        thread.body()
        return nil
    }
}

/// Writes all of `text` to the file descriptor `fd` (`STDOUT_FILENO`,
/// `STDERR_FILENO`) now, unbuffered, as `FileHandle.write` did; continues after
/// short writes and EINTR, drops the rest on any other error (a closed pipe).
public func writeAll(_ text: String, to fd: Int32) {
    var text = text
    text.withUTF8 { buffer in
        var done = 0
        while done < buffer.count {
            let written = write(fd, buffer.baseAddress! + done, buffer.count - done)
            if written > 0 {
                done += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return
            }
        }
    }
}

/// `format` filled in by C's `vsnprintf`, as Foundation's `String(format:)` does
/// for C conversions (`%d`, `%02d`, `%.1f`, `%g`, `%%`); `%@` is not supported:
/// interpolate strings instead.
public func cFormat(_ format: String, _ arguments: any CVarArg...) -> String {
    withVaList(arguments) { first in
        var buffer = [UInt8](repeating: 0, count: 128)
        let needed = Int(vsnprintf(&buffer, buffer.count, format, first))
        guard needed >= 0 else { return "" }
        if needed < buffer.count { return String(decoding: buffer[..<needed], as: UTF8.self) }
        // A va_list is used up once read: format again with a fresh one.
        return withVaList(arguments) { again in
            buffer = [UInt8](repeating: 0, count: needed + 1)
            _ = vsnprintf(&buffer, buffer.count, format, again)
            return String(decoding: buffer[..<needed], as: UTF8.self)
        }
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (Unicode category Zs and
    /// U+0009), as Foundation's `trimmingCharacters(in: .whitespaces)`.
    public func trimmingWhitespace() -> String {
        trimmingScalars { $0 == "\t" || $0.properties.generalCategory == .spaceSeparator }
    }

    /// Without leading and trailing white space and line breaks (the Unicode
    /// White_Space property), as `trimmingCharacters(in: .whitespacesAndNewlines)`.
    public func trimmingWhitespaceAndNewlines() -> String {
        trimmingScalars { $0.properties.isWhitespace }
    }

    private func trimmingScalars(_ trim: (Unicode.Scalar) -> Bool) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !trim($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !trim($0) })!
        return String(String.UnicodeScalarView(scalars[first...last]))
    }
}
