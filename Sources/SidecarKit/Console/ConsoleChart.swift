import Core
import HTML

/// Charts drawn by the server as inline SVG (no script, no library).
enum ConsoleChart {
    /// A bar chart of daily counts with the first, middle and last dates
    /// labelled and the largest value on the axis. The numbers are also
    /// given as a table for screen readers.
    static func dailyBars(_ series: [(day: Int64, count: Int)], title: String) -> HTML {
        let width = 600, height = 180, left = 36, bottom = 22, top = 10
        let maximum = max(series.map(\.count).max() ?? 0, 1)
        let slot = Double(width - left) / Double(max(series.count, 1))
        var bars: [any HTMLContent] = []
        for (index, point) in series.enumerated() {
            let barHeight = Double(height - bottom - top) * Double(point.count) / Double(maximum)
            let x = Double(left) + Double(index) * slot + slot * 0.15
            bars.append(
                tag(
                    "rect",
                    [
                        .class("bar"), Attribute("x", format(x)), Attribute("y", format(Double(height - bottom) - barHeight)),
                        Attribute("width", format(slot * 0.7)), Attribute("height", format(barHeight)),
                    ],
                    [tag("title", [], ["\(dayLabel(point.day)): \(point.count)"])]))
        }
        var labels: [any HTMLContent] = [
            tag("text", [Attribute("x", "0"), Attribute("y", String(top + 8))], [String(maximum)]),
            tag("text", [Attribute("x", "0"), Attribute("y", String(height - bottom))], ["0"]),
        ]
        for index in Set([0, series.count / 2, series.count - 1]).sorted() where index >= 0 && index < series.count {
            // Centred under the bar; the first and last kept inside the frame.
            let x = min(max(Double(left) + (Double(index) + 0.5) * slot, Double(left)), Double(width))
            let anchor = index == 0 ? "start" : index == series.count - 1 ? "end" : "middle"
            labels.append(
                tag(
                    "text",
                    [
                        Attribute("x", format(index == 0 ? Double(left) : index == series.count - 1 ? Double(width) : x)),
                        Attribute("y", String(height - 6)), Attribute("text-anchor", anchor),
                    ], [dayLabel(series[index].day)]))
        }
        let total = series.reduce(0) { $0 + $1.count }
        return tag(
            "figure", [.class("chart")],
            [
                tag(
                    "svg",
                    [
                        Attribute("viewBox", "0 0 \(width) \(height)"), Attribute("role", "img"),
                        Attribute("aria-label", "\(title): \(total) in \(series.count) days, at most \(maximum) a day"),
                    ],
                    [
                        tag(
                            "line",
                            [
                                Attribute("x1", String(left)), Attribute("x2", String(width)), Attribute("y1", String(height - bottom)),
                                Attribute("y2", String(height - bottom)), Attribute("stroke", "#8c959f"),
                            ])
                    ] + bars + labels),
                tag("figcaption", [], ["\(title): \(total) in the last \(series.count) days."]),
                tag(
                    "table", [.class("visually-hidden")],
                    [
                        tag("caption", [], [title]),
                        tag(
                            "tbody", [],
                            series.map { tag("tr", [], [tag("th", [Attribute("scope", "row")], [dayLabel($0.day)]), tag("td", [], [$0.count])]) }),
                    ]),
            ])
    }

    /// `2026-11-30` for a day number (days since 1970-01-01).
    static func dayLabel(_ day: Int64) -> String {
        let date = CivilDate(epochSeconds: day * 86_400)
        return "\(date.year)-\(pad(date.month))-\(pad(date.day))"
    }

    static func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }

    static func format(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}
