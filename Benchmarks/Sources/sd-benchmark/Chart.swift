import Foundation

/// The growth chart: two log-log panels (entries; size of one value), each with the
/// SecureDictionary mutation and load next to raw libsecret's store and lookup of the same blob;
/// below them, when the run measured them, bars for the whole operations that have no growth
/// series (a mutation after idle, the command-line tool against `secret-tool`).
enum GrowthChart {
    private struct Line: Sendable {
        let label: String
        let color: String
        let dashed: Bool
        let marker: Marker
        let value: @Sendable (GrowthPoint) -> Double
    }

    private enum Marker: Sendable { case circle, square, triangle, diamond }

    private static let lines: [Line] = [
        Line(label: "SecureDictionary: one mutation", color: "#1f5fa8", dashed: false, marker: .circle) { $0.mutation.median },
        Line(label: "raw libsecret: store of the same blob", color: "#1f5fa8", dashed: true, marker: .square) {
            $0.rawStore.median
        },
        Line(label: "SecureDictionary: init (load + decode)", color: "#c2571a", dashed: false, marker: .triangle) {
            $0.load.median
        },
        Line(label: "raw libsecret: lookup of the same blob", color: "#c2571a", dashed: true, marker: .diamond) {
            $0.rawLookup.median
        },
    ]

    /// The rows drawn as bars, in this order.
    private static let barRows = ["mutation-idle", "cli-read", "cli-write", "cli-help"]

    static func svg(_ report: Report) -> String {
        let width = 1000.0
        let bars = barRows.compactMap { id in report.rows.first { $0.id == id && $0.unit == .seconds } }
        let barsTop = 520.0
        let height = bars.isEmpty ? 560.0 : barsTop + 30 + 52 * Double(bars.count) + 60
        let panelTop = 96.0
        let panelHeight = 330.0
        let panelWidth = 380.0
        let panelLefts = [90.0, 570.0]

        let values = report.growth.flatMap { point in lines.map { $0.value(point) * 1000 } }.filter { $0 > 0 }
        // The y range snaps to 1-2-5 steps around the data, so small spreads still fill the panel.
        let yLow = niceStep(below: (values.min() ?? 0.1) * 0.9)
        let yHigh = niceStep(above: (values.max() ?? 100) * 1.1)

        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="13">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(width / 2)" y="28" text-anchor="middle" font-size="18" font-weight="bold">SecureDictionary vs raw libsecret on a real gnome-keyring (median time, log–log)</text>

            """
        svg += legend(y: 52, width: width)

        let panels: [(GrowthPoint.Series, String)] = [
            (.entries, "dictionary size (entries of mixed types, ~40 B each encoded)"),
            (.valueBytes, "one entry: size of its data value"),
        ]
        for (panel, (series, title)) in panels.enumerated() {
            let points = report.growth.filter { $0.series == series }.sorted { $0.parameter < $1.parameter }
            guard let first = points.first, let last = points.last else { continue }
            let xLow = pow(10, floor(log10(Double(first.parameter))))
            let xHigh = pow(10, ceil(log10(Double(last.parameter))))
            let left = panelLefts[panel]
            let frame = Frame(
                left: left, top: panelTop, width: panelWidth, height: panelHeight,
                xLow: xLow, xHigh: xHigh, yLow: yLow, yHigh: yHigh)
            svg += axes(frame, title: title, series: series, showYLabel: panel == 0)
            for line in lines {
                let coordinates = points.map { (frame.x(Double($0.parameter)), frame.y(line.value($0) * 1000)) }
                let path = coordinates.map { "\(Format.fixed($0.0, 1)),\(Format.fixed($0.1, 1))" }.joined(separator: " ")
                svg +=
                    "<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(line.color)\" stroke-width=\"2\"\(line.dashed ? " stroke-dasharray=\"6 4\"" : "")/>\n"
                for (x, y) in coordinates { svg += marker(line.marker, x: x, y: y, color: line.color, hollow: line.dashed) }
            }
        }

        svg += barPanel(bars, top: barsTop, width: width)

        if let machine = report.machine {
            let samples = report.notes.first { $0.hasPrefix("growth:") } ?? ""
            svg +=
                "<text x=\"\(width / 2)\" y=\"\(height - 34)\" text-anchor=\"middle\" font-size=\"12\" fill=\"#444\">"
                + escape(
                    "\(machine.cpuModel), \(machine.cpus) CPUs, load \(machine.loadAverageAtStart) at start; gnome-keyring \(machine.gnomeKeyring), libsecret \(machine.libsecret); \(machine.date.prefix(10))"
                )
                + "</text>\n"
            svg +=
                "<text x=\"\(width / 2)\" y=\"\(height - 16)\" text-anchor=\"middle\" font-size=\"12\" fill=\"#444\">"
                + escape("Both sides in one process, one private keyring, alternating samples. \(samples)")
                + "</text>\n"
        }
        svg += "</svg>\n"
        return svg
    }

    /// One pair of bars per row, SecureDictionary over its baseline, on one linear scale.
    private static func barPanel(_ rows: [TargetRow], top: Double, width: Double) -> String {
        guard !rows.isEmpty else { return "" }
        let barLeft = 420.0
        let barWidth = width - barLeft - 110
        let scale = barWidth / (rows.flatMap { [$0.library.median, $0.baseline.median] }.max() ?? 1)
        var svg =
            "<text x=\"\(width / 2)\" y=\"\(top)\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">"
            + "Whole operations against their baseline (median time, linear)</text>\n"
        for (index, row) in rows.enumerated() {
            let y = top + 24 + 52 * Double(index)
            svg +=
                "<text x=\"\(barLeft - 10)\" y=\"\(Format.fixed(y + 12.5, 1))\" text-anchor=\"end\">"
                + escape(row.operation.replacingOccurrences(of: "`", with: "")) + "</text>\n"
            svg +=
                "<text x=\"\(barLeft - 10)\" y=\"\(Format.fixed(y + 32.5, 1))\" text-anchor=\"end\" font-size=\"12\" fill=\"#666\">"
                + escape("vs " + row.baselineName.replacingOccurrences(of: "`", with: "")) + "</text>\n"
            let pairs = [(row.library.median, false), (row.baseline.median, true)]
            for (offset, (seconds, isBaseline)) in pairs.enumerated() {
                let barY = y + 20 * Double(offset)
                let length = max(1, seconds * scale)
                let color = isBaseline ? "#888888" : "#1f5fa8"
                svg +=
                    "<rect x=\"\(barLeft)\" y=\"\(Format.fixed(barY, 1))\" width=\"\(Format.fixed(length, 1))\" height=\"16\" "
                    + "fill=\"\(isBaseline ? "white" : color)\" stroke=\"\(color)\" stroke-width=\"1.5\"/>\n"
                svg +=
                    "<text x=\"\(Format.fixed(barLeft + length + 6, 1))\" y=\"\(Format.fixed(barY + 12.5, 1))\" font-size=\"12\" fill=\"#333\">"
                    + escape(milliseconds(seconds * 1000)) + "</text>\n"
            }
        }
        return svg
    }

    private struct Frame {
        let left, top, width, height, xLow, xHigh, yLow, yHigh: Double

        func x(_ value: Double) -> Double {
            left + (log10(value) - log10(xLow)) / (log10(xHigh) - log10(xLow)) * width
        }

        func y(_ value: Double) -> Double {
            top + height - (log10(value) - log10(yLow)) / (log10(yHigh) - log10(yLow)) * height
        }
    }

    private static func axes(_ frame: Frame, title: String, series: GrowthPoint.Series, showYLabel: Bool) -> String {
        var svg = ""
        let right = frame.left + frame.width
        let bottom = frame.top + frame.height
        // Grid lines on 1-9 × 10^k, labels on 1, 2 and 5 × 10^k.
        var decade = pow(10, floor(log10(frame.yLow) + 1e-9))
        while decade <= frame.yHigh * 1.0001 {
            for step in 1...9 {
                let value = decade * Double(step)
                guard value >= frame.yLow * 0.9999, value <= frame.yHigh * 1.0001 else { continue }
                let y = frame.y(value)
                let major = step == 1 || step == 2 || step == 5
                svg +=
                    "<line x1=\"\(frame.left)\" y1=\"\(y)\" x2=\"\(right)\" y2=\"\(y)\" stroke=\"\(step == 1 ? "#c8c8c8" : "#ececec")\"/>\n"
                if major {
                    svg +=
                        "<text x=\"\(frame.left - 8)\" y=\"\(y + 4)\" text-anchor=\"end\">\(escape(milliseconds(value)))</text>\n"
                }
            }
            decade *= 10
        }
        decade = frame.xLow
        while decade <= frame.xHigh * 1.0001 {
            let x = frame.x(decade)
            svg += "<line x1=\"\(x)\" y1=\"\(frame.top)\" x2=\"\(x)\" y2=\"\(bottom)\" stroke=\"#d0d0d0\"/>\n"
            svg +=
                "<text x=\"\(x)\" y=\"\(bottom + 20)\" text-anchor=\"middle\">\(escape(series == .entries ? Format.integer(Int(decade)) : decimalBytes(decade)))</text>\n"
            if decade < frame.xHigh {
                for step in 2...9 {
                    let xMinor = frame.x(decade * Double(step))
                    svg += "<line x1=\"\(xMinor)\" y1=\"\(frame.top)\" x2=\"\(xMinor)\" y2=\"\(bottom)\" stroke=\"#efefef\"/>\n"
                }
            }
            decade *= 10
        }
        svg +=
            "<rect x=\"\(frame.left)\" y=\"\(frame.top)\" width=\"\(frame.width)\" height=\"\(frame.height)\" fill=\"none\" stroke=\"#333\"/>\n"
        svg +=
            "<text x=\"\(frame.left + frame.width / 2)\" y=\"\(bottom + 44)\" text-anchor=\"middle\" font-size=\"14\">\(escape(title))</text>\n"
        if showYLabel {
            let cy = frame.top + frame.height / 2
            svg +=
                "<text x=\"\(frame.left - 62)\" y=\"\(cy)\" text-anchor=\"middle\" font-size=\"14\" transform=\"rotate(-90 \(frame.left - 62) \(cy))\">time per operation (median)</text>\n"
        }
        return svg
    }

    private static func legend(y: Double, width: Double) -> String {
        var svg = ""
        let columnWidth = 460.0
        let left = (width - 2 * columnWidth) / 2 + 20
        for (index, line) in lines.enumerated() {
            let x = left + Double(index % 2) * columnWidth
            let rowY = y + Double(index / 2) * 20
            svg +=
                "<line x1=\"\(x)\" y1=\"\(rowY)\" x2=\"\(x + 36)\" y2=\"\(rowY)\" stroke=\"\(line.color)\" stroke-width=\"2\"\(line.dashed ? " stroke-dasharray=\"6 4\"" : "")/>\n"
            svg += marker(line.marker, x: x + 18, y: rowY, color: line.color, hollow: line.dashed)
            svg += "<text x=\"\(x + 46)\" y=\"\(rowY + 4)\">\(escape(line.label))</text>\n"
        }
        return svg
    }

    private static func marker(_ marker: Marker, x: Double, y: Double, color: String, hollow: Bool) -> String {
        let fill = hollow ? "white" : color
        let style = "fill=\"\(fill)\" stroke=\"\(color)\" stroke-width=\"1.5\""
        let (cx, cy) = (Format.fixed(x, 1), Format.fixed(y, 1))
        switch marker {
        case .circle:
            return "<circle cx=\"\(cx)\" cy=\"\(cy)\" r=\"4\" \(style)/>\n"
        case .square:
            return "<rect x=\"\(Format.fixed(x - 4, 1))\" y=\"\(Format.fixed(y - 4, 1))\" width=\"8\" height=\"8\" \(style)/>\n"
        case .triangle:
            return
                "<polygon points=\"\(cx),\(Format.fixed(y - 5, 1)) \(Format.fixed(x - 5, 1)),\(Format.fixed(y + 4, 1)) \(Format.fixed(x + 5, 1)),\(Format.fixed(y + 4, 1))\" \(style)/>\n"
        case .diamond:
            return
                "<polygon points=\"\(cx),\(Format.fixed(y - 5, 1)) \(Format.fixed(x + 5, 1)),\(cy) \(cx),\(Format.fixed(y + 5, 1)) \(Format.fixed(x - 5, 1)),\(cy)\" \(style)/>\n"
        }
    }

    /// The largest 1, 2 or 5 × 10^k at or below `value`.
    private static func niceStep(below value: Double) -> Double {
        let decade = pow(10, floor(log10(value)))
        return [5.0, 2, 1].map { $0 * decade }.first { $0 <= value } ?? decade
    }

    /// The smallest 1, 2 or 5 × 10^k at or above `value`.
    private static func niceStep(above value: Double) -> Double {
        let decade = pow(10, floor(log10(value)))
        return [1.0, 2, 5, 10].map { $0 * decade }.first { $0 >= value } ?? 10 * decade
    }

    /// 0.1 ms, 1 ms, 10 ms, 1 s.
    private static func milliseconds(_ value: Double) -> String {
        func tidy(_ number: Double) -> String { Format.number((number * 1000).rounded() / 1000) }
        if value >= 1000 { return "\(tidy(value / 1000)) s" }
        if value >= 1 { return "\(tidy(value)) ms" }
        return "\(tidy(value * 1000)) µs"
    }

    /// 100 B, 1 kB, 10 kB, 1 MB (decimal: the sizes measured are powers of ten).
    private static func decimalBytes(_ value: Double) -> String {
        if value >= 1_000_000 { return "\(Format.number(value / 1_000_000)) MB" }
        if value >= 1000 { return "\(Format.number(value / 1000)) kB" }
        return "\(Format.number(value)) B"
    }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
