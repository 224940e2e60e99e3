/// A first-in-first-out queue over an array: taking from the front moves an
/// index instead of shifting the elements, and the storage is reused once
/// the queue is empty. Waiters and jobs are taken in the order they came.
public struct FIFOQueue<Element> {
    private var elements: [Element] = []
    private var head = 0

    public init() {}

    /// Elements waiting.
    public var count: Int { elements.count - head }

    public mutating func append(_ element: Element) { elements.append(element) }

    /// The oldest element, removed; nil when the queue is empty.
    public mutating func popFirst() -> Element? {
        guard head < elements.count else { return nil }
        let element = elements[head]
        head += 1
        if head == elements.count {
            elements.removeAll(keepingCapacity: true)
            head = 0
        }
        return element
    }
}

extension FIFOQueue: Sendable where Element: Sendable {}
