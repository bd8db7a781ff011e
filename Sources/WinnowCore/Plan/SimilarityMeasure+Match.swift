import Foundation

/// The similarity of `similar:` conditions, computed by winnow itself so that every engine links
/// the same pairs (docs/reference.md, "Several keys in one rule"). Both measures compare
/// sequences of Unicode scalars: the compared columns after their normalisers, joined by one
/// space.
extension SimilarityMeasure {
    /// Whether `a` and `b` are close enough.
    public func matches(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Bool {
        switch self {
        case let .jaroWinkler(threshold): return Self.jaroWinkler(a, b) >= threshold
        case let .levenshtein(limit): return Self.levenshtein(a, b, limit: limit) <= limit
        }
    }

    /// Jaro-Winkler similarity in 0...1: Jaro's (matches within half the longer length less
    /// one, transpositions halved), raised by 0.1 per common leading scalar up to four. Two
    /// empty sequences are 1, one empty sequence against another is 0.
    public static func jaroWinkler(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Double {
        if a.isEmpty && b.isEmpty { return 1 }
        if a.isEmpty || b.isEmpty { return 0 }
        let window = max(0, max(a.count, b.count) / 2 - 1)
        var aMatched = [Bool](repeating: false, count: a.count)
        var bMatched = [Bool](repeating: false, count: b.count)
        var matches = 0
        for i in a.indices {
            let low = max(0, i - window)
            let high = min(b.count - 1, i + window)
            guard low <= high else { continue }
            for j in low...high where !bMatched[j] && a[i] == b[j] {
                aMatched[i] = true
                bMatched[j] = true
                matches += 1
                break
            }
        }
        guard matches > 0 else { return 0 }
        var transpositions = 0
        var k = 0
        for i in a.indices where aMatched[i] {
            while !bMatched[k] { k += 1 }
            if a[i] != b[k] { transpositions += 1 }
            k += 1
        }
        let m = Double(matches)
        let jaro = (m / Double(a.count) + m / Double(b.count) + (m - Double(transpositions / 2)) / m) / 3
        var prefix = 0
        while prefix < min(4, a.count, b.count) && a[prefix] == b[prefix] { prefix += 1 }
        return jaro + Double(prefix) * 0.1 * (1 - jaro)
    }

    /// The Levenshtein distance (insertions, deletions, substitutions of one scalar), or
    /// `limit + 1` once it is known to exceed `limit`.
    public static func levenshtein(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar], limit: Int) -> Int {
        if abs(a.count - b.count) > limit { return limit + 1 }
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            var smallest = current[0]
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(substitution, previous[j] + 1, current[j - 1] + 1)
                smallest = min(smallest, current[j])
            }
            if smallest > limit { return limit + 1 }
            swap(&previous, &current)
        }
        return min(previous[b.count], limit + 1)
    }
}
