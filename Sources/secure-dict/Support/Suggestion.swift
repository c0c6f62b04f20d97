/// "Did you mean …?": the candidate closest to a word that matched nothing, when one is close
/// enough to be a slip of the keyboard.
///
/// ```swift
/// Suggestion.closest(to: "reed", among: ["list", "read", "write"])      // "read"
/// Suggestion.closest(to: "Settigns", among: ["settings", "cache"])      // "settings"
/// Suggestion.closest(to: "frobnicate", among: ["list", "read"])         // nil
/// ```
///
/// Never used on keys or values: those are secret, and a suggestion would show one.
enum Suggestion {
    /// The candidate at the smallest edit distance from `typed` (case ignored), if that distance
    /// is at most 1 for words of up to 4 characters and at most 2 for longer ones; among equally
    /// close candidates, the first.
    static func closest(to typed: String, among candidates: [String]) -> String? {
        let limit = typed.count <= 4 ? 1 : 2
        var best: (candidate: String, distance: Int)?
        for candidate in candidates where candidate != typed {
            let distance = distance(typed.lowercased(), candidate.lowercased())
            if distance <= limit, distance < best?.distance ?? .max { best = (candidate, distance) }
        }
        return best?.candidate
    }

    /// The optimal-string-alignment distance: insertions, deletions, substitutions and swaps of
    /// two neighbouring characters each count 1 ("lsit" is 1 from "list").
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        // rows[i][j]: the distance between the first i characters of a and the first j of b.
        var rows = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { rows[i][0] = i }
        for j in 0...b.count { rows[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let substitution = a[i - 1] == b[j - 1] ? 0 : 1
                rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + substitution)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
                }
            }
        }
        return rows[a.count][b.count]
    }
}
