import Basics

/// A seeded generator (``SplitMix64``), so a failing property or fuzz test can be replayed
/// from its seed.
public struct SeededGenerator: RandomNumberGenerator {
    private var generator: SplitMix64

    /// Creates a generator; the same seed gives the same sequence.
    public init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 { generator.next() }

    /// A random integer in `0..<bound`.
    public mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
