/// The two steps of a binary min-heap kept in an array, ordered by `before`: the readers that merge
/// sorted sources share them (the spill's sorted writes, the query runs' members among the events).
extension Array {
    /// Appends `x` and moves it up to its place.
    @inline(__always) mutating func heapPush(_ x: Element, by before: (Element, Element) -> Bool) {
        append(x)
        var k = count - 1
        while k > 0 {
            let parent = (k - 1) / 2
            guard before(self[k], self[parent]) else { return }
            swapAt(k, parent)
            k = parent
        }
    }

    /// Moves the first element down to its place (after it was replaced).
    @inline(__always) mutating func heapSiftDown(by before: (Element, Element) -> Bool) {
        var k = 0
        let n = count
        while true {
            let l = 2 * k + 1, r = l + 1
            var m = k
            if l < n, before(self[l], self[m]) { m = l }
            if r < n, before(self[r], self[m]) { m = r }
            if m == k { return }
            swapAt(k, m)
            k = m
        }
    }
}
