/// A walk over two lists sorted by one order, in step: each step is a position only the left
/// list has, one only the right list has, or one of each holding the same key (never neither).
///
/// ```swift
/// var merge = SortedMerge(leftCount: old.count, rightCount: new.count)
/// while let step = try merge.next(comparing: { left, right in compare(old[left], new[right]) }) {
///     switch step {
///     case (let before?, nil): removed(old[before])
///     case (nil, let after?): inserted(new[after])
///     case (let before?, let after?): updated(old[before], new[after])
///     case (nil, nil): break   // never
///     }
/// }
/// ```
struct SortedMerge {
    typealias Step = (left: Int?, right: Int?)

    let leftCount: Int
    let rightCount: Int
    private(set) var left = 0
    private(set) var right = 0

    /// The next step, or `nil` when both lists are done. `compare` (asked only when both have
    /// a position left) answers negative, zero or positive as the left key sorts before, with
    /// or after the right one; what it throws is thrown, and the walk does not move on.
    mutating func next<Failure: Error>(
        comparing compare: (_ left: Int, _ right: Int) throws(Failure) -> Int
    ) throws(Failure) -> Step? {
        let order: Int
        switch (left < leftCount, right < rightCount) {
        case (false, false): return nil
        case (true, false): order = -1
        case (false, true): order = 1
        case (true, true): order = try compare(left, right)
        }
        defer {
            if order <= 0 { left += 1 }
            if order >= 0 { right += 1 }
        }
        return (order <= 0 ? left : nil, order >= 0 ? right : nil)
    }
}
