import Synchronization

/// Counters, gauges and histograms rendered in the Prometheus text
/// exposition format (version 0.0.4). Updating a metric is a dictionary
/// lookup under a lock and an atomic add, so it can sit on a request's path.
public final class MetricsRegistry: Sendable {
    private let families = Mutex<[any MetricFamily]>([])
    private let collectors = Mutex<[@Sendable () async -> [CollectedFamily]]>([])

    public init() {}

    /// A counter family (`name` should end in `_total`).
    public func counter(_ name: String, _ help: String, labels: [String] = []) -> Counter {
        register(Counter(name: name, help: help, labelNames: labels))
    }

    /// A gauge family.
    public func gauge(_ name: String, _ help: String, labels: [String] = []) -> Gauge {
        register(Gauge(name: name, help: help, labelNames: labels))
    }

    /// A histogram family with these upper bounds (ascending; `+Inf` is added).
    public func histogram(_ name: String, _ help: String, labels: [String] = [], buckets: [Double]) -> Histogram {
        register(Histogram(name: name, help: help, labelNames: labels, buckets: buckets))
    }

    /// Values read when scraped (process statistics, counts from storage).
    public func addCollector(_ collect: @escaping @Sendable () async -> [CollectedFamily]) {
        collectors.withLock { $0.append(collect) }
    }

    private func register<Family: MetricFamily>(_ family: Family) -> Family {
        families.withLock { $0.append(family) }
        return family
    }

    /// Content type of `render()`'s output.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Every family in the text exposition format.
    public func render() async -> String {
        var text = ""
        for family in families.withLock({ $0 }) { family.render(into: &text) }
        for collect in collectors.withLock({ $0 }) {
            for family in await collect() { family.render(into: &text) }
        }
        return text
    }
}

/// A family of metrics sharing a name, one child per combination of label values.
protocol MetricFamily: Sendable {
    func render(into text: inout String)
}

/// Storage of one family's children by label values.
final class Children<Child: Sendable>: Sendable {
    let labelNames: [String]
    private let children = Mutex<[[String]: Child]>([:])
    private let make: @Sendable () -> Child

    init(labelNames: [String], make: @escaping @Sendable () -> Child) {
        self.labelNames = labelNames
        self.make = make
        // A family without labels has its one child from the start, so it
        // is exposed (as zero) before anything happened.
        if labelNames.isEmpty { children.withLock { $0[[]] = make() } }
    }

    func child(_ values: [String]) -> Child {
        precondition(values.count == labelNames.count, "label values do not match the family's label names")
        return children.withLock { children in
            if let existing = children[values] { return existing }
            let created = make()
            children[values] = created
            return created
        }
    }

    /// Children sorted by label values (a stable exposition).
    var sorted: [(labels: [String], child: Child)] {
        children.withLock { $0.map { (labels: $0.key, child: $0.value) } }.sorted { $0.labels.lexicographicallyPrecedes($1.labels) }
    }
}

/// A monotonically increasing count.
public final class Counter: MetricFamily, Sendable {
    public let name: String
    let help: String
    let children: Children<Cell>

    init(name: String, help: String, labelNames: [String]) {
        self.name = name
        self.help = help
        children = Children(labelNames: labelNames) { Cell() }
    }

    /// Adds `amount` (never negative) to the child with these label values.
    public func increment(_ labels: String..., by amount: Int = 1) {
        guard amount > 0 else { return }
        children.child(labels).value.add(amount, ordering: .relaxed)
    }

    /// The child's current count (tests).
    public func value(_ labels: String...) -> Int { children.child(labels).value.load(ordering: .relaxed) }

    func render(into text: inout String) { children.render(name: name, help: help, type: "counter", into: &text) }
}

/// A value that goes up and down.
public final class Gauge: MetricFamily, Sendable {
    public let name: String
    let help: String
    let children: Children<Cell>

    init(name: String, help: String, labelNames: [String]) {
        self.name = name
        self.help = help
        children = Children(labelNames: labelNames) { Cell() }
    }

    public func set(_ labels: String..., to value: Int) { children.child(labels).value.store(value, ordering: .relaxed) }
    public func add(_ labels: String..., by amount: Int) { children.child(labels).value.add(amount, ordering: .relaxed) }
    public func value(_ labels: String...) -> Int { children.child(labels).value.load(ordering: .relaxed) }

    func render(into text: inout String) { children.render(name: name, help: help, type: "gauge", into: &text) }
}

/// Observations counted into buckets, with their sum and count.
public final class Histogram: MetricFamily, Sendable {
    public let name: String
    let help: String
    let bounds: [Double]
    let children: Children<HistogramChild>

    init(name: String, help: String, labelNames: [String], buckets: [Double]) {
        self.name = name
        self.help = help
        bounds = buckets.sorted()
        let count = bounds.count
        children = Children(labelNames: labelNames) { HistogramChild(buckets: count) }
    }

    /// Records one observation for the child with these label values.
    public func observe(_ value: Double, _ labels: String...) {
        let child = children.child(labels)
        // The first bucket whose bound holds the value; past the last, +Inf only.
        var index = bounds.count
        for (position, bound) in bounds.enumerated() where value <= bound {
            index = position
            break
        }
        child.record(value, bucket: index)
    }

    /// Observations so far for the child (tests).
    public func count(_ labels: String...) -> Int { children.child(labels).count.load(ordering: .relaxed) }

    func render(into text: inout String) {
        Exposition.header(name: name, help: help, type: "histogram", into: &text)
        let names = children.labelNames + ["le"]
        for (labels, child) in children.sorted {
            var cumulative = 0
            for (index, bound) in bounds.enumerated() {
                cumulative += child.buckets[index].value.load(ordering: .relaxed)
                Exposition.sample(name + "_bucket", names: names, values: labels + [Exposition.number(bound)], value: Double(cumulative), into: &text)
            }
            let total = child.count.load(ordering: .relaxed)
            Exposition.sample(name + "_bucket", names: names, values: labels + ["+Inf"], value: Double(total), into: &text)
            Exposition.sample(name + "_sum", names: children.labelNames, values: labels, value: child.sum, into: &text)
            Exposition.sample(name + "_count", names: children.labelNames, values: labels, value: Double(total), into: &text)
        }
    }
}

/// One atomic count (atomics cannot live in collections directly).
final class Cell: Sendable {
    let value = Atomic<Int>(0)
}

final class HistogramChild: Sendable {
    /// Per-bucket counts (not cumulative); the last slot is past every bound.
    let buckets: [Cell]
    let count = Atomic<Int>(0)
    private let sumBits = Atomic<UInt64>(0)

    init(buckets: Int) {
        self.buckets = (0...buckets).map { _ in Cell() }
    }

    func record(_ value: Double, bucket: Int) {
        buckets[bucket].value.add(1, ordering: .relaxed)
        var current = sumBits.load(ordering: .relaxed)
        while true {
            let updated = (Double(bitPattern: current) + value).bitPattern
            let (exchanged, original) = sumBits.compareExchange(expected: current, desired: updated, ordering: .relaxed)
            if exchanged { break }
            current = original
        }
        count.add(1, ordering: .relaxed)
    }

    var sum: Double { Double(bitPattern: sumBits.load(ordering: .relaxed)) }
}

/// A family whose values are read when scraped.
public struct CollectedFamily: Sendable {
    public enum Kind: String, Sendable { case counter, gauge }
    public let name: String
    public let help: String
    public let kind: Kind
    public let labelNames: [String]
    public let samples: [(labels: [String], value: Double)]

    public init(name: String, help: String, kind: Kind, labelNames: [String] = [], samples: [(labels: [String], value: Double)]) {
        self.name = name
        self.help = help
        self.kind = kind
        self.labelNames = labelNames
        self.samples = samples
    }

    /// One unlabelled value.
    public init(name: String, help: String, kind: Kind, value: Double) {
        self.init(name: name, help: help, kind: kind, samples: [(labels: [], value: value)])
    }

    func render(into text: inout String) {
        Exposition.header(name: name, help: help, type: kind.rawValue, into: &text)
        for sample in samples {
            Exposition.sample(name, names: labelNames, values: sample.labels, value: sample.value, into: &text)
        }
    }
}

/// The text format's escaping and number rules.
enum Exposition {
    static func header(name: String, help: String, type: String, into text: inout String) {
        text += "# HELP \(name) "
        for character in help {
            switch character {
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            default: text.append(character)
            }
        }
        text += "\n# TYPE \(name) \(type)\n"
    }

    static func sample(_ name: String, names: [String], values: [String], value: Double, into text: inout String) {
        text += name
        if !names.isEmpty {
            text += "{"
            for (index, label) in names.enumerated() {
                if index > 0 { text += "," }
                text += label
                text += "=\""
                for character in values[index] {
                    switch character {
                    case "\\": text += "\\\\"
                    case "\"": text += "\\\""
                    case "\n": text += "\\n"
                    default: text.append(character)
                    }
                }
                text += "\""
            }
            text += "}"
        }
        text += " "
        text += number(value)
        text += "\n"
    }

    /// Whole numbers without a fraction; others in Swift's shortest form.
    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}

extension Children where Child == Cell {
    /// A counter's or a gauge's exposition: the header, then one sample a child.
    func render(name: String, help: String, type: String, into text: inout String) {
        Exposition.header(name: name, help: help, type: type, into: &text)
        for (labels, child) in sorted {
            Exposition.sample(name, names: labelNames, values: labels, value: Double(child.value.load(ordering: .relaxed)), into: &text)
        }
    }
}
