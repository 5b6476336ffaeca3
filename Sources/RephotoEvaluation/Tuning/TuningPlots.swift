import Foundation

/// The two figures of a tuning run, as plain SVG: accuracy against time with the Pareto front, and the
/// objective against each varied parameter.
enum TuningPlots {
    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }

    private static func format(_ v: Double) -> String { String(format: abs(v) >= 100 ? "%.0f" : abs(v) >= 1 ? "%.2f" : "%.3f", v) }

    /// Trials as points (x = ms per frame, y = objective); the front (no trial both faster and better) in red.
    static func pareto(_ records: [TrialRecord], objective: TuningObjective) -> String {
        let points = records.compactMap { r -> (Double, Double, Int)? in
            guard let y = r.objective, let x = r.metrics.msPerFrame else { return nil }
            return (x, y, r.trial)
        }
        let better: (Double, Double) -> Bool = objective.higherIsBetter ? { $0 > $1 } : { $0 < $1 }
        var front: [(Double, Double, Int)] = []
        for p in points.sorted(by: { $0.0 < $1.0 || ($0.0 == $1.0 && better($0.1, $1.1)) }) where front.last.map({ better(p.1, $0.1) }) ?? true {
            front.append(p)
        }
        return panel(width: 640, height: 420, title: "\(objective.rawValue) against time per frame (Pareto front in red)",
                     xLabel: "median ms per frame", yLabel: objective.rawValue, points: points.map { ($0.0, $0.1) },
                     line: front.map { ($0.0, $0.1) })
    }

    /// One panel per varied parameter: the objective of every trial against that parameter's value (choices
    /// and flags at evenly spaced positions, labelled).
    static func sensitivity(_ records: [TrialRecord], paths: [String], objective: TuningObjective) -> String {
        let width = 420, height = 300
        var body = ""
        for (i, path) in paths.enumerated() {
            let raw = records.compactMap { r -> (String, Double)? in
                guard let y = r.objective, let v = r.parameters.first(where: { $0.first == path })?.last else { return nil }
                return (v, y)
            }
            let numeric = raw.allSatisfy { Double($0.0) != nil }
            let categories = Array(Set(raw.map(\.0))).sorted()
            let points = raw.map { (numeric ? Double($0.0)! : Double(categories.firstIndex(of: $0.0)!), $0.1) }
            let svg = panel(width: width, height: height, title: path, xLabel: numeric ? path : categories.joined(separator: " | "),
                            yLabel: objective.rawValue, points: points, line: [])
            body += "<g transform=\"translate(0,\(i * height))\">\(svg.dropFirst(svg.firstIndex(of: ">")!.utf16Offset(in: svg) + 1).dropLast(6))</g>\n"
        }
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(max(1, paths.count) * height)\">\n\(body)</svg>\n"
    }

    private static func panel(width: Int, height: Int, title: String, xLabel: String, yLabel: String,
                              points: [(Double, Double)], line: [(Double, Double)]) -> String {
        let left = 60.0, right = 20.0, top = 30.0, bottom = 45.0
        let w = Double(width) - left - right, h = Double(height) - top - bottom
        let xs = points.map(\.0), ys = points.map(\.1)
        var (x0, x1) = (xs.min() ?? 0, xs.max() ?? 1), (y0, y1) = (ys.min() ?? 0, ys.max() ?? 1)
        if x1 - x0 < 1e-12 { x0 -= 0.5; x1 += 0.5 }
        if y1 - y0 < 1e-12 { y0 -= 0.5; y1 += 0.5 }
        func px(_ x: Double) -> Double { left + (x - x0) / (x1 - x0) * w }
        func py(_ y: Double) -> Double { top + h - (y - y0) / (y1 - y0) * h }
        var s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\">"
        s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>"
        s += "<text x=\"\(left)\" y=\"18\" font-family=\"sans-serif\" font-size=\"13\">\(escape(title))</text>"
        s += "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(w)\" height=\"\(h)\" fill=\"none\" stroke=\"#888\"/>"
        s += "<text x=\"\(left)\" y=\"\(Double(height) - 8)\" font-family=\"sans-serif\" font-size=\"11\">\(escape(xLabel)): \(format(x0))…\(format(x1))</text>"
        s += "<text x=\"4\" y=\"\(top + 12)\" font-family=\"sans-serif\" font-size=\"11\">\(format(y1))</text>"
        s += "<text x=\"4\" y=\"\(top + h)\" font-family=\"sans-serif\" font-size=\"11\">\(format(y0))</text>"
        s += "<text x=\"4\" y=\"\(top + h / 2)\" font-family=\"sans-serif\" font-size=\"11\">\(escape(yLabel))</text>"
        for (x, y) in points {
            s += "<circle cx=\"\(px(x))\" cy=\"\(py(y))\" r=\"3\" fill=\"#36c\" fill-opacity=\"0.7\"/>"
        }
        if line.count > 0 {
            s += "<polyline fill=\"none\" stroke=\"#d22\" stroke-width=\"2\" points=\"\(line.map { "\(px($0.0)),\(py($0.1))" }.joined(separator: " "))\"/>"
            for (x, y) in line { s += "<circle cx=\"\(px(x))\" cy=\"\(py(y))\" r=\"4\" fill=\"#d22\"/>" }
        }
        return s + "</svg>"
    }
}
