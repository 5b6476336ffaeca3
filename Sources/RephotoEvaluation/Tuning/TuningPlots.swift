import Foundation

/// The figures of a tuning run, as plain SVG (pareto.svg, sensitivity.svg, and tuning.html's): every axis with
/// ticks and its unit, log-range parameters on log axes, trials labelled by id.
enum TuningPlots {
    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }

    /// A numeric axis over data: linear or logarithmic, with ticks at 1, 2, 5 x 10^k (log: at decades, and at
    /// 2 and 5 within them when the range spans less than two decades; under one decade, at the linear axis's
    /// ticks, placed logarithmically).
    struct Axis {
        var lo: Double
        var hi: Double
        var log: Bool
        /// Categorical: ticks at 0, 1, ... labelled with these.
        var categories: [String]? = nil

        init(_ values: [Double], log: Bool) {
            let finite = values.filter { $0.isFinite && (!log || $0 > 0) }
            self.log = log && !finite.isEmpty
            var lo = finite.min() ?? 0, hi = finite.max() ?? 1
            if self.log {
                if hi / lo < 1.0001 { lo /= 1.5; hi *= 1.5 }
                let pad = Foundation.pow(hi / lo, 0.05)
                (lo, hi) = (lo / pad, hi * pad)
            } else {
                if hi - lo < 1e-12 { lo -= max(0.5, abs(lo) * 0.1); hi += max(0.5, abs(hi) * 0.1) }
                let pad = (hi - lo) * 0.05
                (lo, hi) = (lo - pad, hi + pad)
            }
            (self.lo, self.hi) = (lo, hi)
        }

        init(categories: [String]) {
            lo = -0.5
            hi = Double(max(1, categories.count)) - 0.5
            log = false
            self.categories = categories
        }

        /// 0 at `lo`, 1 at `hi`.
        func fraction(_ v: Double) -> Double {
            log ? (Foundation.log(v) - Foundation.log(lo)) / (Foundation.log(hi) - Foundation.log(lo)) : (v - lo) / (hi - lo)
        }

        var ticks: [(Double, String)] {
            if let categories { return categories.enumerated().map { (Double($0.offset), $0.element) } }
            var values: [Double] = []
            if log && hi / lo >= 10 {
                let first = Int(floor(log10(lo))), last = Int(ceil(log10(hi)))
                let multipliers: [Double] = last - first <= 2 ? [1, 2, 5] : [1]
                for k in first...last { for m in multipliers { values.append(m * Foundation.pow(10, Double(k))) } }
            } else {
                let raw = (hi - lo) / 6, power = Foundation.pow(10, floor(log10(raw)))
                let step = [1.0, 2, 5, 10].map { $0 * power }.first { $0 >= raw } ?? 10 * power
                var v = (lo / step).rounded(.up) * step
                while v <= hi + step * 1e-9 { values.append(abs(v) < step * 1e-9 ? 0 : v); v += step }
            }
            let eps = (hi - lo) * 1e-9
            return values.filter { $0 >= lo - eps && $0 <= hi + eps }.map { ($0, TuningPlots.label($0)) }
        }
    }

    /// A tick label: up to four significant digits, no trailing zeros.
    static func label(_ v: Double) -> String {
        if v == 0 { return "0" }
        if abs(v) >= 1e5 || abs(v) < 1e-3 { return String(format: "%.2g", v) }
        var text = String(format: "%.4g", v)
        if text.contains("."), !text.contains("e") { while text.hasSuffix("0") { text.removeLast() }; if text.hasSuffix(".") { text.removeLast() } }
        return text
    }

    /// A plotted trial: position, label (its id) and fill colour.
    struct Point {
        var x: Double
        var y: Double
        var label: String?
        var color = "#36c"
    }

    /// One scatter panel with ticked axes; `line` joins its points in order (the Pareto front, best so far).
    static func scatter(width: Double, height: Double, title: String, x: Axis, xLabel: String, y: Axis, yLabel: String,
                        points: [Point], line: [Point] = [], lineColor: String = "#d22", step: Bool = false) -> String {
        let left = 64.0, right = 16.0, top = 30.0, bottom = 46.0
        let w = width - left - right, h = height - top - bottom
        func px(_ v: Double) -> Double { left + x.fraction(v) * w }
        func py(_ v: Double) -> Double { top + h - y.fraction(v) * h }
        func n(_ v: Double) -> String { String(format: "%.1f", v) }
        var s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" font-family=\"sans-serif\" font-size=\"11\">"
        s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>"
        s += "<text x=\"\(n(left))\" y=\"18\" font-size=\"13\" font-weight=\"bold\">\(escape(title))</text>"
        for (v, text) in y.ticks {
            s += "<line x1=\"\(n(left))\" y1=\"\(n(py(v)))\" x2=\"\(n(left + w))\" y2=\"\(n(py(v)))\" stroke=\"#eee\"/>"
            s += "<line x1=\"\(n(left - 4))\" y1=\"\(n(py(v)))\" x2=\"\(n(left))\" y2=\"\(n(py(v)))\" stroke=\"#888\"/>"
            s += "<text x=\"\(n(left - 6))\" y=\"\(n(py(v) + 4))\" text-anchor=\"end\">\(escape(text))</text>"
        }
        for (v, text) in x.ticks {
            s += "<line x1=\"\(n(px(v)))\" y1=\"\(n(top + h))\" x2=\"\(n(px(v)))\" y2=\"\(n(top + h + 4))\" stroke=\"#888\"/>"
            s += "<text x=\"\(n(px(v)))\" y=\"\(n(top + h + 16))\" text-anchor=\"middle\">\(escape(text))</text>"
        }
        s += "<rect x=\"\(n(left))\" y=\"\(n(top))\" width=\"\(n(w))\" height=\"\(n(h))\" fill=\"none\" stroke=\"#888\"/>"
        s += "<text x=\"\(n(left + w / 2))\" y=\"\(n(height - 8))\" text-anchor=\"middle\">\(escape(xLabel + (x.log ? " (log scale)" : "")))</text>"
        s += "<text transform=\"translate(14 \(n(top + h / 2))) rotate(-90)\" text-anchor=\"middle\">\(escape(yLabel))</text>"
        if line.count > 1 {
            var path = "M\(n(px(line[0].x))),\(n(py(line[0].y)))"
            for p in line.dropFirst() { path += step ? " H\(n(px(p.x))) V\(n(py(p.y)))" : " L\(n(px(p.x))),\(n(py(p.y)))" }
            s += "<path d=\"\(path)\" fill=\"none\" stroke=\"\(lineColor)\" stroke-width=\"1.8\"/>"
        }
        // Trials drawn on the same spot share one label ("#12, #13"), so no id hides another.
        var labels: [[Int]: [String]] = [:], order: [[Int]] = []
        for p in points {
            s += "<circle cx=\"\(n(px(p.x)))\" cy=\"\(n(py(p.y)))\" r=\"3.5\" fill=\"\(p.color)\" fill-opacity=\"0.8\"><title>\(escape(p.label ?? ""))</title></circle>"
            guard let text = p.label else { continue }
            let spot = [Int(px(p.x) / 3), Int(py(p.y) / 3)]
            if labels[spot] == nil { order.append(spot) }
            labels[spot, default: []].append(text)
        }
        if points.count <= 60 {
            for spot in order {
                let text = labels[spot]!.joined(separator: ", ")
                s += "<text x=\"\(n(Double(spot[0]) * 3 + 6))\" y=\"\(n(Double(spot[1]) * 3 - 4))\" font-size=\"9\" fill=\"#555\">\(escape(text))</text>"
            }
        }
        return s + "</svg>"
    }

    /// Trials as points (x = median ms per frame, y = objective), labelled by trial id; the front (no trial both
    /// faster and better) joined in red.
    static func pareto(_ records: [TrialRecord], objective: TuningObjective, width: Double = 640, height: Double = 420) -> String {
        let points = records.compactMap { r -> Point? in
            guard let y = r.objective, let x = r.metrics.msPerFrame else { return nil }
            return Point(x: x, y: y, label: "#\(r.trial)")
        }
        let front = paretoFront(points, higherIsBetter: objective.higherIsBetter)
        let frontIDs = Set(front.compactMap(\.label))
        return scatter(width: width, height: height, title: "\(objective.rawValue) against time per frame (Pareto front in red)",
                       x: Axis(points.map(\.x), log: false), xLabel: "median time per frame, ms", y: Axis(points.map(\.y), log: false),
                       yLabel: objective.axisLabel, points: points.map { p in var q = p; if frontIDs.contains(p.label ?? "") { q.color = "#d22" }; return q },
                       line: front)
    }

    /// The trials no other trial beats on both time and objective, fastest first.
    static func paretoFront(_ points: [Point], higherIsBetter: Bool) -> [Point] {
        let better: (Double, Double) -> Bool = higherIsBetter ? { $0 > $1 } : { $0 < $1 }
        var front: [Point] = []
        for p in points.sorted(by: { $0.x < $1.x || ($0.x == $1.x && better($0.y, $1.y)) }) where front.last.map({ better(p.y, $0.y) }) ?? true {
            front.append(p)
        }
        return front
    }

    /// One panel per varied parameter: the objective of every trial against that parameter's value (log axis for
    /// a log range; choices and flags as labelled categories).
    static func sensitivity(_ records: [TrialRecord], dimensions: [TuningSpace.Dimension], objective: TuningObjective) -> String {
        let width = 460.0, height = 300.0
        var body = ""
        for (i, dimension) in dimensions.enumerated() {
            let svg = sensitivityPanel(records, dimension: dimension, objective: objective, width: width, height: height)
            let inner = svg[svg.index(after: svg.firstIndex(of: ">")!)...].dropLast(6)
            body += "<g transform=\"translate(0,\(Int(Double(i) * height)))\">\(inner)</g>\n"
        }
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(Double(max(1, dimensions.count)) * height))\" font-family=\"sans-serif\" font-size=\"11\">\n\(body)</svg>\n"
    }

    static func sensitivityPanel(_ records: [TrialRecord], dimension: TuningSpace.Dimension, objective: TuningObjective, width: Double, height: Double) -> String {
        let raw = records.compactMap { r -> (String, Double, Int)? in
            guard let y = r.objective, let v = r.parameters.first(where: { $0.first == dimension.path })?.last else { return nil }
            return (v, y, r.trial)
        }
        let numeric = !raw.isEmpty && raw.allSatisfy { Double($0.0) != nil }
        let categories = dimension.values.map(\.description).filter { c in raw.contains { $0.0 == c } }
        let x = numeric ? Axis(raw.map { Double($0.0)! }, log: dimension.log) : Axis(categories: categories.isEmpty ? Array(Set(raw.map(\.0))).sorted() : categories)
        let points = raw.map { item in
            Point(x: numeric ? Double(item.0)! : Double(x.categories!.firstIndex(of: item.0) ?? 0), y: item.1, label: "#\(item.2)")
        }
        return scatter(width: width, height: height, title: dimension.path, x: x, xLabel: dimension.path, y: Axis(points.map(\.y), log: false),
                       yLabel: objective.axisLabel, points: points)
    }

    /// The objective by trial id, and the best so far as a step line.
    static func history(_ records: [TrialRecord], objective: TuningObjective) -> String {
        let sorted = records.filter { $0.objective != nil }.sorted { $0.trial < $1.trial }
        var best: Double?
        var line: [Point] = []
        for r in sorted {
            let y = r.objective!
            if best.map({ objective.higherIsBetter ? y > $0 : y < $0 }) ?? true { best = y }
            line.append(Point(x: Double(r.trial), y: best!))
        }
        let points = sorted.map { Point(x: Double($0.trial), y: $0.objective!, label: "#\($0.trial)", color: $0.tooSlow ? "#aaa" : "#36c") }
        return scatter(width: 600, height: 340, title: "Optimisation history: \(objective.rawValue) by trial, best so far in red",
                       x: Axis(points.map(\.x), log: false), xLabel: "trial id", y: Axis(points.map(\.y), log: false), yLabel: objective.axisLabel,
                       points: points, line: line, step: true)
    }

    /// A colour from dark blue (worst) to yellow (best) for `t` in 0...1.
    static func color(_ t: Double) -> String {
        let stops: [(Double, Double, Double)] = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)]
        let u = min(1, max(0, t)) * Double(stops.count - 1), k = min(stops.count - 2, Int(u)), f = u - Double(k)
        let a = stops[k], b = stops[k + 1]
        return String(format: "#%02x%02x%02x", Int(a.0 + (b.0 - a.0) * f), Int(a.1 + (b.1 - a.1) * f), Int(a.2 + (b.2 - a.2) * f))
    }

    /// Parallel coordinates: one vertical axis per parameter and one for the objective; each trial a line across
    /// them, coloured by its objective (yellow best). Log ranges on log axes, choices as labelled positions.
    static func parallelCoordinates(_ records: [TrialRecord], dimensions: [TuningSpace.Dimension], objective: TuningObjective) -> String {
        let scored = records.filter { $0.objective != nil }
        let columns = dimensions.count + 1
        let width = max(520.0, 170.0 * Double(columns)), height = 380.0, top = 40.0, bottom = 60.0, left = 70.0, right = 90.0
        let h = height - top - bottom, gap = (width - left - right) / Double(max(1, columns - 1))
        func n(_ v: Double) -> String { String(format: "%.1f", v) }
        var axes: [Axis] = dimensions.map { d in
            let texts = scored.compactMap { r in r.parameters.first { $0.first == d.path }?.last }
            if !texts.isEmpty, texts.allSatisfy({ Double($0) != nil }) { return Axis(texts.map { Double($0)! }, log: d.log) }
            return Axis(categories: d.values.map(\.description))
        }
        let ys = scored.map { $0.objective! }
        axes.append(Axis(ys, log: false))
        let lo = ys.min() ?? 0, hi = ys.max() ?? 1
        func goodness(_ y: Double) -> Double { hi > lo ? (objective.higherIsBetter ? (y - lo) / (hi - lo) : (hi - y) / (hi - lo)) : 1 }
        func position(_ axis: Axis, _ text: String) -> Double {
            if let categories = axis.categories { return axis.fraction(Double(categories.firstIndex(of: text) ?? 0)) }
            return axis.fraction(Double(text) ?? axis.lo)
        }
        var s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" font-family=\"sans-serif\" font-size=\"11\">"
        s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>"
        s += "<text x=\"\(n(left))\" y=\"18\" font-size=\"13\" font-weight=\"bold\">Parallel coordinates: each trial a line, coloured by \(escape(objective.rawValue)) (yellow best)</text>"
        // Worst first, so the best lines are drawn on top.
        for r in scored.sorted(by: { goodness($0.objective!) < goodness($1.objective!) }) {
            var points: [String] = []
            for (k, d) in dimensions.enumerated() {
                let text = r.parameters.first { $0.first == d.path }?.last ?? ""
                points.append("\(n(left + gap * Double(k))),\(n(top + h - position(axes[k], text) * h))")
            }
            points.append("\(n(left + gap * Double(dimensions.count))),\(n(top + h - axes[dimensions.count].fraction(r.objective!) * h))")
            s += "<polyline points=\"\(points.joined(separator: " "))\" fill=\"none\" stroke=\"\(color(goodness(r.objective!)))\" stroke-width=\"1.6\" stroke-opacity=\"0.85\"><title>trial \(r.trial)</title></polyline>"
        }
        for (k, axis) in axes.enumerated() {
            let x = left + gap * Double(k)
            s += "<line x1=\"\(n(x))\" y1=\"\(n(top))\" x2=\"\(n(x))\" y2=\"\(n(top + h))\" stroke=\"#333\"/>"
            for (v, text) in axis.ticks {
                let y = top + h - axis.fraction(v) * h
                // The objective's axis, the last, is labelled on its right, clear of the lines that end on it.
                let side = k == axes.count - 1 ? 1.0 : -1.0
                s += "<line x1=\"\(n(x + 4 * side))\" y1=\"\(n(y))\" x2=\"\(n(x))\" y2=\"\(n(y))\" stroke=\"#333\"/>"
                s += "<text x=\"\(n(x + 6 * side))\" y=\"\(n(y + 4))\" text-anchor=\"\(side > 0 ? "start" : "end")\">\(escape(text))</text>"
            }
            let name = k < dimensions.count ? dimensions[k].path + (axis.log ? " (log)" : "") : objective.axisLabel
            s += "<text x=\"\(n(x))\" y=\"\(n(top + h + 20))\" text-anchor=\"middle\" font-weight=\"bold\">\(escape(name))</text>"
        }
        // The colour scale.
        let barX = width - 40, barTop = top, barHeight = h
        for i in 0..<20 {
            s += "<rect x=\"\(n(barX))\" y=\"\(n(barTop + barHeight * Double(19 - i) / 20))\" width=\"12\" height=\"\(n(barHeight / 20 + 0.5))\" fill=\"\(color(Double(i) / 19))\"/>"
        }
        s += "<text x=\"\(n(barX + 6))\" y=\"\(n(barTop - 4))\" text-anchor=\"middle\">best</text><text x=\"\(n(barX + 6))\" y=\"\(n(barTop + barHeight + 14))\" text-anchor=\"middle\">worst</text>"
        return s + "</svg>"
    }

    /// Horizontal bars: each parameter's importance share, 0 to 1.
    static func importance(_ importance: [ParameterImportance]) -> String {
        let rowHeight = 26.0, left = 230.0, barWidth = 320.0, width = left + barWidth + 130, height = 50 + rowHeight * Double(max(1, importance.count)) + 30
        func n(_ v: Double) -> String { String(format: "%.1f", v) }
        var s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" font-family=\"sans-serif\" font-size=\"11\">"
        s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/><text x=\"8\" y=\"18\" font-size=\"13\" font-weight=\"bold\">Parameter importance (main-effect variance share, η²)</text>"
        for (k, item) in importance.sorted(by: { ($0.share ?? -1) > ($1.share ?? -1) }).enumerated() {
            let y = 36 + rowHeight * Double(k)
            s += "<text x=\"\(n(left - 8))\" y=\"\(n(y + 14))\" text-anchor=\"end\">\(escape(item.path))</text>"
            if let share = item.share {
                s += "<rect x=\"\(n(left))\" y=\"\(n(y + 3))\" width=\"\(n(max(1, share * barWidth)))\" height=\"16\" fill=\"#36c\"/>"
                s += "<text x=\"\(n(left + share * barWidth + 6))\" y=\"\(n(y + 15))\">\(String(format: "%.2f", share))</text>"
            } else {
                s += "<text x=\"\(n(left))\" y=\"\(n(y + 15))\" fill=\"#777\">– (the objective did not vary)</text>"
            }
        }
        let axisY = 36 + rowHeight * Double(max(1, importance.count)) + 4
        s += "<line x1=\"\(n(left))\" y1=\"\(n(axisY))\" x2=\"\(n(left + barWidth))\" y2=\"\(n(axisY))\" stroke=\"#888\"/>"
        for t in stride(from: 0.0, through: 1.0, by: 0.25) {
            s += "<line x1=\"\(n(left + t * barWidth))\" y1=\"\(n(axisY))\" x2=\"\(n(left + t * barWidth))\" y2=\"\(n(axisY + 4))\" stroke=\"#888\"/>"
            s += "<text x=\"\(n(left + t * barWidth))\" y=\"\(n(axisY + 16))\" text-anchor=\"middle\">\(label(t))</text>"
        }
        s += "<text x=\"\(n(left + barWidth + 8))\" y=\"\(n(axisY + 16))\">share of variance</text>"
        return s + "</svg>"
    }
}
