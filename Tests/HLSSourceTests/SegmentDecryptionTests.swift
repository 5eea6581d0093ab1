import ByteSourceAPI
import Foundation
import HLSSource
import Synchronization
import Testing

/// `plain` encrypted by the openssl command (AES-128-CBC, PKCS7 padding), as a packager does.
func opensslEncrypt(_ plain: Data, key: [UInt8], iv: [UInt8]) throws -> Data {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("spool-aes-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let input = folder.appendingPathComponent("in")
    let output = folder.appendingPathComponent("out")
    try plain.write(to: input)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = [
        "enc", "-aes-128-cbc", "-K", hex(key), "-iv", hex(iv), "-in", input.path, "-out", output.path,
    ]
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
    return try Data(contentsOf: output)
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

@Suite("HLS: AES-128 decryption")
struct SegmentDecryptionTests {
    static let key: [UInt8] = Array(0..<16)
    static let iv: [UInt8] = Array(repeating: 0, count: 15) + [7]

    /// Any split of the ciphertext into feeds gives the plaintext back, for lengths on and off
    /// the 16-byte block (PKCS7 always pads, a whole block when the length is a multiple).
    @Test(arguments: [0, 1, 15, 16, 17, 1000, 4096])
    func openSSLsCiphertextDecryptsInAnyPieces(length: Int) throws {
        let plain = Data((0..<length).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) })
        let cipher = try opensslEncrypt(plain, key: Self.key, iv: Self.iv)
        for piece in [1, 5, 16, 33, cipher.count] where piece > 0 {
            let decryptor = try #require(AES128CBCDecryptor(key: Self.key, iv: Self.iv))
            var out = Data()
            var at = 0
            while at < cipher.count {
                out += try #require(decryptor.feed(cipher[at..<min(at + piece, cipher.count)]))
                at += piece
            }
            out += try #require(decryptor.finish())
            #expect(out == plain, "length \(length), pieces of \(piece)")
        }
    }

    @Test func aWrongKeyFailsAtTheEndInsteadOfGivingWrongBytesQuietly() throws {
        let cipher = try opensslEncrypt(Data(repeating: 1, count: 100), key: Self.key, iv: Self.iv)
        let decryptor = try #require(AES128CBCDecryptor(key: Array(repeating: 9, count: 16), iv: Self.iv))
        _ = decryptor.feed(cipher)
        #expect(decryptor.finish() == nil)
        #expect(AES128CBCDecryptor(key: [1, 2, 3], iv: Self.iv) == nil, "a key must be 16 bytes")
    }
}
