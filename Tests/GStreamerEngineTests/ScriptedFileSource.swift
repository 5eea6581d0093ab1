import ByteSourceAPI
import Foundation
import MediaSource
import Synchronization
import TestSupport

/// A local file served as a slow download would serve it: `answer` decides how many bytes a
/// read at an offset gets (at most its maximum; less than its minimum only at the end of the
/// file), or nil while they have not arrived (the read waits, for good: nothing wakes it).
final class ScriptedFileSource: ByteSource {
    /// Bytes for a read at `offset` of at most `maxLength` bytes that needs `minLength`, or nil.
    typealias Answer = @Sendable (_ offset: Int64, _ maxLength: Int, _ minLength: Int) -> Int?

    private let file: FileByteSource
    private let size: Int64
    private let answer: Answer
    private let held: @Sendable (Range<Int64>) -> Bool

    init(
        path: String, size: Int64, holds held: @escaping @Sendable (Range<Int64>) -> Bool = { _ in true },
        answer: @escaping Answer
    ) {
        file = FileByteSource(path: path)
        self.size = size
        self.held = held
        self.answer = answer
    }

    /// A file of which only `arrived` has come: a read elsewhere, or one that wants more than its
    /// run holds, waits.
    static func partlyArrived(path: String, size: Int64, arrived: [Range<Int64>]) -> ScriptedFileSource {
        ScriptedFileSource(
            path: path, size: size,
            holds: { range in arrived.contains { $0.contains(range.lowerBound) && range.upperBound <= $0.upperBound } }
        ) { offset, maxLength, minLength in
            guard let run = arrived.first(where: { $0.contains(offset) }) else { return nil }
            let here = Int(min(Int64(maxLength), run.upperBound - offset))
            return here >= minLength || run.upperBound == size ? here : nil
        }
    }

    /// A file whose reads are answered a few bytes at a time (1 to 1500, whatever the reader
    /// asked for), as a slow link delivers them; a read that needs more gets what it needs.
    static func trickling(path: String, size: Int64, seed: UInt64) -> ScriptedFileSource {
        let generator = SharedGenerator(seed: seed)
        return ScriptedFileSource(path: path, size: size) { _, maxLength, minLength in
            max(minLength, min(maxLength, generator.next(in: 1...1500)))
        }
    }

    func open(_ completion: @escaping @Sendable (Result<ResourceInfo, MediaSourceError>) -> Void) {
        file.open(completion)
    }
    func read(at offset: Int64, maxLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        read(at: offset, maxLength: maxLength, minLength: maxLength, wake: wake)
    }
    func read(at offset: Int64, maxLength: Int, minLength: Int, wake: @escaping @Sendable () -> Void) -> ReadOutcome {
        if offset >= size { return .endOfStream }
        guard let count = answer(offset, maxLength, minLength) else { return .pending }
        return file.read(at: offset, maxLength: count, wake: wake)
    }
    func cancelPendingReads() {}
    func close() { file.close() }
    func holds(_ range: Range<Int64>) -> Bool { held(range) }
}

/// A seeded generator the reads of any thread draw from.
private final class SharedGenerator: Sendable {
    private let generator: Mutex<SeededGenerator>

    init(seed: UInt64) { generator = Mutex(SeededGenerator(seed: seed)) }

    func next(in range: ClosedRange<Int>) -> Int { generator.withLock { Int.random(in: range, using: &$0) } }
}
