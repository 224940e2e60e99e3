/// Runs `body` for every element with at most `limit` running at once and
/// returns the results in the elements' order. Used wherever work fans out
/// to the network (stops in a cycle, pushes in a batch) so one slow peer
/// cannot be asked for everything at once.
public func boundedMap<Element: Sendable, Result: Sendable>(
    _ elements: [Element], limit: Int, _ body: @escaping @Sendable (Element) async -> Result
) async -> [Result] {
    guard !elements.isEmpty else { return [] }
    var results = [Result?](repeating: nil, count: elements.count)
    await withTaskGroup(of: (Int, Result).self) { group in
        var next = 0
        func addNext() {
            guard next < elements.count else { return }
            let index = next
            next += 1
            group.addTask { (index, await body(elements[index])) }
        }
        for _ in 0..<min(max(limit, 1), elements.count) { addNext() }
        for await (index, result) in group {
            results[index] = result
            addNext()
        }
    }
    return results.map { $0! }
}

/// JSON string quoting (RFC 8259): quotes, backslashes and control characters escaped.
public func jsonQuoted(_ text: String) -> String {
    var output = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": output += "\\\""
        case "\\": output += "\\\\"
        case "\n": output += "\\n"
        case "\r": output += "\\r"
        case "\t": output += "\\t"
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: output.unicodeScalars.append(scalar)
        }
    }
    return output + "\""
}

extension Array {
    /// Consecutive slices of at most `size` elements (pages of work).
    public func pages(of size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: Swift.max(size, 1)).map { self[$0..<Swift.min($0 + Swift.max(size, 1), count)] }
    }
}

extension Duration {
    /// Whole milliseconds, for log lines.
    public var wholeMilliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}

extension Duration {
    /// The duration in seconds, with its fraction.
    public var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}
