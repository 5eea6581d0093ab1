import ByteSourceAPI
import CCrypto
import FoundationEssentials
import Synchronization

/// AES-128-CBC decryption with PKCS7 padding (RFC 8216 §5.2), fed as the ciphertext arrives:
/// OpenSSL holds back the last block of each feed until ``finish()``, which checks and removes
/// the padding. It owns its OpenSSL context and frees it. Unchecked Sendable: one caller at a
/// time (``DecryptingSource`` uses it under its lock).
public final class AES128CBCDecryptor: @unchecked Sendable {
    private let context: OpaquePointer

    /// A decryptor for `key` and `iv` (16 bytes each); nil when they are not 16 bytes.
    public init?(key: [UInt8], iv: [UInt8]) {
        guard key.count == 16, iv.count == 16, let context = EVP_CIPHER_CTX_new() else { return nil }
        self.context = context
        guard EVP_DecryptInit_ex(context, EVP_aes_128_cbc(), nil, key, iv) == 1 else { return nil }
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// The plaintext `ciphertext` completes (all but what the next feed or the end decides).
    public func feed(_ ciphertext: Data) -> Data? {
        var output = [UInt8](repeating: 0, count: ciphertext.count + 16)
        var written: Int32 = 0
        let ok = ciphertext.withUnsafeBytes { input in
            EVP_DecryptUpdate(
                context, &output, &written, input.bindMemory(to: UInt8.self).baseAddress, Int32(input.count))
        }
        return ok == 1 ? Data(output.prefix(Int(written))) : nil
    }

    /// The last plaintext, its padding removed; nil when the padding is wrong (a wrong key, or
    /// ciphertext cut short).
    public func finish() -> Data? {
        var output = [UInt8](repeating: 0, count: 16)
        var written: Int32 = 0
        guard EVP_DecryptFinal_ex(context, &output, &written) == 1 else { return nil }
        return Data(output.prefix(Int(written)))
    }
}

/// One encrypted segment's plaintext, read forward from its source's ciphertext. The key comes
/// from `key` (fetched once per key URI by the caller) before the first byte is decrypted.
final class DecryptingSource: ByteSource {
    typealias KeyFetch = @Sendable () async throws(MediaSourceError) -> Data

    private let inner: any ByteSource
    private let fetchKey: KeyFetch
    private let iv: [UInt8]
    /// Where the ciphertext is in `inner` (a byte range, or all of it).
    private let range: Range<Int64>?
    private let state = Mutex(State())

    private struct State {
        var decryptor: AES128CBCDecryptor?
        /// The segment's plaintext so far, all of it: a reader may read an earlier offset again
        /// (a type finder peeking back at the start), and one segment is small.
        var plain = Data()
        var cipherNext: Int64 = 0
        var finished = false
        var failure: MediaSourceError?
    }

    init(inner: any ByteSource, range: Range<Int64>?, iv: [UInt8], fetchKey: @escaping KeyFetch) {
        self.inner = inner
        self.range = range
        self.iv = iv
        self.fetchKey = fetchKey
        state.withLock { $0.cipherNext = range?.lowerBound ?? 0 }
    }

    func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {
        inner.open { [self] opened in
            Task {
                do throws(MediaSourceError) {
                    let info = try opened.get()
                    let key = try await fetchKey()
                    guard let decryptor = AES128CBCDecryptor(key: [UInt8](key), iv: iv) else {
                        throw .unavailable("the HLS key is \(key.count) bytes, not 16")
                    }
                    state.withLock { $0.decryptor = decryptor }
                    completion(.success(ResourceInfo(length: nil, contentType: info.contentType, randomAccess: false)))
                } catch {
                    completion(.failure(error))
                }
            }
        }
    }

    func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        read(at: offset, maxLength: maxLength, minLength: maxLength, wake: wake)
    }

    func read(at offset: Int64, maxLength: Int, minLength: Int, wake: @escaping @Sendable () -> Void)
        -> ReadOutcome
    {
        while true {
            let step = state.withLock { state -> (ReadOutcome?, Int64) in
                if let failure = state.failure { return (.failed(failure), 0) }
                if offset < Int64(state.plain.count) {
                    let start = state.plain.startIndex + Int(offset)
                    return (.data(Data(state.plain[start..<min(state.plain.endIndex, start + maxLength)])), 0)
                }
                if state.finished { return (.endOfStream, 0) }
                return (nil, state.cipherNext)
            }
            if let answer = step.0 { return answer }
            let limit = range.map { Int(min(Int64(64 * 1024), $0.upperBound - step.1)) } ?? 64 * 1024
            let outcome: ReadOutcome =
                limit <= 0 ? .endOfStream : inner.read(at: step.1, maxLength: limit, minLength: 1, wake: wake)
            switch outcome {
            case .data(let cipher): decrypt(cipher, final: false)
            case .endOfStream: decrypt(Data(), final: true)
            case .pending, .failed: return outcome
            }
        }
    }

    private func decrypt(_ cipher: Data, final: Bool) {
        state.withLock { state in
            guard let decryptor = state.decryptor else {
                state.failure = .readFailed("the HLS key is not here")
                return
            }
            state.cipherNext += Int64(cipher.count)
            if !cipher.isEmpty {
                guard let plain = decryptor.feed(cipher) else {
                    state.failure = .readFailed("AES-128 decryption failed")
                    return
                }
                state.plain += plain
            }
            if final {
                guard let last = decryptor.finish() else {
                    state.failure = .readFailed("an HLS segment does not decrypt with its key (bad padding)")
                    return
                }
                state.plain += last
                state.finished = true
            }
        }
    }

    func cancelPendingReads() { inner.cancelPendingReads() }
    func close() { inner.close() }
    func setBackground(_ background: Bool) { inner.setBackground(background) }
    func whenTransferred(_ handler: @escaping @Sendable (TransferSample) -> Void) { inner.whenTransferred(handler) }
    func holds(_ range: Range<Int64>) -> Bool { false }
}
