import Foundation

/// Where two byte strings first differ, or nil when they are identical.
/// Tests compare large buffers with this instead of `#expect(a == b)`, whose
/// failure message diffs the whole collections and takes minutes on audio.
public func firstDifference(_ a: Data, _ b: Data) -> Int? {
    if a == b { return nil }
    var index = 0
    for (left, right) in zip(a, b) {
        if left != right { break }
        index += 1
    }
    return index
}

/// A one-line account of how two byte strings differ, for failure messages.
public func describeDifference(_ a: Data, _ b: Data) -> String {
    guard let at = firstDifference(a, b) else { return "identical (\(a.count) bytes)" }
    return "\(a.count) vs \(b.count) bytes, first difference at byte \(at)"
}

/// `count` bytes of a pattern that does not repeat at short periods, so a byte delivered at
/// the wrong offset shows up as a difference.
public func patternedBody(_ count: Int) -> Data {
    Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) })
}
