import RephotoKit
import RephotoData
import Foundation

/// The evaluation's `report.html`: one self-contained page (inline SVG and CSS, images as data URIs, no
/// scripts or fonts fetched) with, per sequence, error-per-frame plots for the vision and sensor paths,
/// the cumulative error curve behind mAA, the summary figures and overlays of the worst, median and best frames.
public enum EvaluationReport {
    public static func html(summary: EvaluationSummary, rows: [EvaluationRow], thumbnails: [String: [String: Data]],
                            title: String = "Rephoto evaluation") -> String {
        var body = "<h1>\(escape(title))</h1>\n" + (summary.provenance?.html ?? "")
        if summary.complete == false {
            body += "<p class=partial><strong>Partial run:</strong> interrupted after \(summary.overall.frames) of \(summary.framesPlanned ?? 0) frames; every figure covers only those (resume with <code>rephoto evaluate --resume</code>).</p>\n"
        }
        body += "<p>\(summary.overall.frames) frames in \(summary.sequences.count) sequences; \(summary.overall.failures) failed"
        body += summary.brokenSequences.isEmpty ? ".</p>\n" : "; \(summary.brokenSequences.count) sequences could not be read.</p>\n"
        body += table(["all": summary.overall].merging(summary.sequences) { a, _ in a }, order: ["all"] + summary.sequences.keys.sorted())
        if !summary.brokenSequences.isEmpty {
            body += "<h2>Sequences not evaluated</h2><ul>" + summary.brokenSequences.map { "<li><code>\(escape($0.path))</code>: \(escape($0.error))</li>" }.joined() + "</ul>\n"
        }
        let groups = Dictionary(grouping: rows, by: \.sequence)
        for name in summary.sequences.keys.sorted() {
            let seq = (groups[name] ?? []).sorted { $0.index < $1.index }
            body += "<section><h2>\(escape(name))</h2>\n<div class=plots>"
            body += perFramePlot(seq)
            if seq.contains(where: { $0.pairErrorDegrees != nil }) { body += cumulativePlot(seq) }
            body += "</div>\n"
            if let shots = thumbnails[name], !shots.isEmpty {
                body += "<div class=thumbs>"
                for (label, row) in representativeFrames(seq) {
                    guard let jpeg = shots[label] else { continue }
                    body += "<figure><img alt='\(label) frame' src='data:image/jpeg;base64,\(jpeg.base64EncodedString())'><figcaption>\(escape(caption(label, row)))</figcaption></figure>"
                }
                body += "</div>\n<p class=note>\(escape(sentinelNote))</p>\n"
            }
            let failures = seq.filter(\.failed)
            if !failures.isEmpty {
                // Open, so a printout or a screenshot shows them; long lists are cut with a count.
                let shown = 50
                body += "<details open><summary>\(failures.count) failed frames</summary><ul>"
                body += failures.prefix(shown).map { "<li><code>\(escape($0.file))</code>: \(escape($0.failureReason ?? ""))</li>" }.joined()
                if failures.count > shown { body += "<li>and \(failures.count - shown) more (frames.csv lists them all)</li>" }
                body += "</ul></details>\n"
            }
            body += "</section>\n"
        }
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
            <style>
            body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
            table{border-collapse:collapse;font-size:13px;margin:8px 0}th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}
            th:first-child,td:first-child{text-align:left}.plots{display:flex;flex-wrap:wrap;gap:16px}
            .partial{background:#fde8e8;border:1px solid #c33;padding:6px 10px}.thumbs{display:flex;gap:12px}figure{margin:0}figcaption{text-align:center;font-size:13px}
            svg text{font-size:11px;fill:#333}section{border-top:1px solid #ddd;margin-top:18px}.note{font-size:12px;color:#555}
            \(Provenance.css)
            </style></head><body>
            \(body)
            </body></html>

            """
    }

    /// Worst, median and best successful frames of a sequence: by pair error where there is truth, else by score.
    /// The evaluator draws these frames and the report captions them, from this one ranking.
    static func representativeFrames(_ rows: [EvaluationRow]) -> [(String, EvaluationRow)] {
        let ok = rows.filter { !$0.failed }
        let ranked = ok.contains { $0.pairErrorDegrees != nil }
            ? ok.sorted { ($0.pairErrorDegrees ?? 0, $0.rotationErrorDegrees ?? 0, $0.index) < ($1.pairErrorDegrees ?? 0, $1.rotationErrorDegrees ?? 0, $1.index) }
            : ok.sorted { (-($0.score ?? 0), $0.index) < (-($1.score ?? 0), $1.index) }
        guard let best = ranked.first, let worst = ranked.last else { return [] }
        var chosen = Set<Int>()
        return [("worst", worst), ("median", ranked[ranked.count / 2]), ("best", best)].filter { chosen.insert($0.1.index).inserted }
    }

    /// What the captions' sentinel values stand for, said under the pictures.
    static let sentinelNote = "Green: the target, where the reference view belongs; red: the reference view in the frame; yellow: the inlier matches, "
        + "a line from each one's reference position. Pair error: the larger of the rotation error and the translation direction error. "
        + "A frame that failed, or whose translation is undetermined (a pure rotation, too little parallax), has no translation "
        + "to compare: it counts as 180°, the largest error there is, in the pair error and in mAA."

    /// "worst: frame-0012.jpg, pair error 0.52°, rotation 0.10°, score 96.4"; a pair error that is the 180°
    /// of an undetermined translation says so.
    static func caption(_ label: String, _ row: EvaluationRow) -> String {
        var parts = ["\(label): \(row.file)"]
        if let e = row.pairErrorDegrees, e >= 180, let cause = row.translationUndetermined {
            parts.append("pair error 180° (translation undetermined: \(cause))")
        } else if let e = row.pairErrorDegrees {
            parts.append("pair error \(String(format: "%.2f", e))°")
        }
        if let e = row.rotationErrorDegrees { parts.append("rotation \(String(format: "%.2f", e))°") }
        if let s = row.score { parts.append("score \(String(format: "%.1f", s))") }
        return parts.joined(separator: ", ")
    }

    static func table(_ stats: [String: EvaluationStatistics], order: [String]) -> String {
        func f(_ v: Double?, _ digits: Int = 2) -> String { v.map { String(format: "%.\(digits)f", $0) } ?? "–" }
        var out = "<table><tr><th>sequence</th><th>frames</th><th>failed</th><th>success</th><th>mAA@5</th><th>mAA@10</th>"
        out += "<th>rotation mAA@5</th><th>rotation mAA@10</th>"
        out += "<th>median rot. err °</th><th>p90 rot. err °</th><th>median transl. err °</th><th>median corner err px</th>"
        out += "<th>median score</th><th>median sensor–vision °</th><th>median total ms</th></tr>\n"
        for name in order {
            guard let s = stats[name] else { continue }
            out += "<tr><td>\(escape(name))</td><td>\(s.frames)</td><td>\(s.failures)</td><td>\(f(s.successRate * 100, 0))%</td>"
            out += "<td>\(f(s.maa5, 3))</td><td>\(f(s.maa10, 3))</td><td>\(f(s.rotationMaa5, 3))</td><td>\(f(s.rotationMaa10, 3))</td><td>\(f(s.medianRotationErrorDegrees))</td><td>\(f(s.p90RotationErrorDegrees))</td>"
            out += "<td>\(f(s.medianTranslationErrorDegrees))</td><td>\(f(s.medianCornerErrorPixels))</td><td>\(f(s.medianScore, 1))</td>"
            out += "<td>\(f(s.medianSensorVisionAngleDegrees))</td><td>\(f(s.medianMilliseconds(.total), 0))</td></tr>\n"
        }
        return out + "</table>\n"
    }

    static func perFramePlot(_ rows: [EvaluationRow]) -> String {
        func series(_ name: String, _ color: String, _ path: KeyPath<EvaluationRow, Double?>) -> Plot.Series? {
            let points = rows.compactMap { r in r[keyPath: path].map { (Double(r.index), $0) } }
            return points.isEmpty ? nil : Plot.Series(name: name, color: color, points: points)
        }
        let errors = [series("vision rotation", "#1f77b4", \.rotationErrorDegrees), series("vision translation", "#ff7f0e", \.translationErrorDegrees),
                      series("sensor rotation", "#2ca02c", \.sensorRotationErrorDegrees)].compactMap { $0 }
        if !errors.isEmpty { return Plot(title: "Error per frame", xLabel: "frame", yLabel: "degrees", series: errors, integerX: true).svg }
        let fallback = [series("score", "#1f77b4", \.score), series("corner error px", "#d62728", \.cornerErrorPixels)].compactMap { $0 }
        return Plot(title: "Score and corner error per frame", xLabel: "frame", yLabel: "", series: fallback, integerX: true).svg
    }

    /// Fraction of frames whose error is below each threshold: mAA@N is this curve's mean at 1...N degrees.
    static func cumulativePlot(_ rows: [EvaluationRow]) -> String {
        let withTruth = rows.filter { $0.pairErrorDegrees != nil }
        func curve(_ name: String, _ color: String, _ errors: [Double]) -> Plot.Series? {
            guard !errors.isEmpty else { return nil }
            let points = stride(from: 0.0, through: 10.0, by: 0.1).map { t in (t, Double(errors.filter { $0 < t }.count) / Double(errors.count)) }
            return Plot.Series(name: name, color: color, points: points)
        }
        let series = [
            curve("vision pair error", "#9467bd", withTruth.compactMap(\.pairErrorDegrees)),
            curve("vision rotation", "#1f77b4", withTruth.map { $0.failed ? 180 : ($0.rotationErrorDegrees ?? 180) }),
            curve("sensor rotation", "#2ca02c", withTruth.compactMap(\.sensorRotationErrorDegrees)),
        ].compactMap { $0 }
        return Plot(title: "Cumulative error (mAA)", xLabel: "threshold, degrees", yLabel: "fraction below", series: series, yRange: 0...1).svg
    }

    /// Text for HTML: the five characters HTML gives meaning to, escaped.
    public static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "'", with: "&#39;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

/// A small line plot as inline SVG.
struct Plot {
    struct Series {
        var name: String
        var color: String
        var points: [(Double, Double)]
        /// Dots at the points, no line: values on some frames only (robust updates among tracked frames).
        var dots = false
    }

    var title: String
    var xLabel: String
    var yLabel: String
    var series: [Series]
    var yRange: ClosedRange<Double>?
    /// x is a frame index: ticks only at whole frames, however few there are.
    var integerX = false
    /// A dashed vertical line at x with its label (where a session converged).
    var marker: (x: Double, label: String)? = nil
    let width = 540.0, height = 260.0, left = 52.0, right = 12.0, top = 26.0, bottom = 38.0

    var svg: String {
        let xs = series.flatMap { $0.points.map(\.0) }, ys = series.flatMap { $0.points.map(\.1) }
        guard let x0 = xs.min(), let x1 = xs.max(), let yMax = ys.max() else { return "" }
        let yLo = yRange?.lowerBound ?? 0, yHi = yRange?.upperBound ?? (yMax > 0 ? Self.niceCeiling(yMax) : 1)
        let xHi = x1 > x0 ? x1 : x0 + 1
        let pw = width - left - right, ph = height - top - bottom
        func px(_ x: Double) -> Double { left + (x - x0) / (xHi - x0) * pw }
        func py(_ y: Double) -> Double { top + ph - (min(max(y, yLo), yHi) - yLo) / (yHi - yLo) * ph }
        var s = "<svg width='\(Int(width))' height='\(Int(height))' viewBox='0 0 \(Int(width)) \(Int(height))' role='img'>"
        s += "<rect x='0' y='0' width='\(Int(width))' height='\(Int(height))' fill='white'/>"
        s += "<text x='\(Int(left))' y='16' font-weight='bold'>\(EvaluationReport.escape(title))</text>"
        for i in 0...4 {
            let y = yLo + (yHi - yLo) * Double(i) / 4, yy = py(y)
            s += "<line x1='\(f(left))' y1='\(f(yy))' x2='\(f(width - right))' y2='\(f(yy))' stroke='#eee'/>"
            s += "<text x='\(f(left - 6))' y='\(f(yy + 4))' text-anchor='end'>\(Self.label(y))</text>"
        }
        for x in xTicks(x0, xHi) {
            s += "<text x='\(f(px(x)))' y='\(f(height - bottom + 16))' text-anchor='middle'>\(Self.label(x))</text>"
        }
        s += "<line x1='\(f(left))' y1='\(f(top + ph))' x2='\(f(width - right))' y2='\(f(top + ph))' stroke='#888'/>"
        s += "<line x1='\(f(left))' y1='\(f(top))' x2='\(f(left))' y2='\(f(top + ph))' stroke='#888'/>"
        s += "<text x='\(f(left + pw / 2))' y='\(f(height - 6))' text-anchor='middle'>\(EvaluationReport.escape(xLabel))</text>"
        s += "<text transform='translate(12 \(f(top + ph / 2))) rotate(-90)' text-anchor='middle'>\(EvaluationReport.escape(yLabel))</text>"
        if let marker, marker.x >= x0, marker.x <= xHi {
            s += "<line x1='\(f(px(marker.x)))' y1='\(f(top))' x2='\(f(px(marker.x)))' y2='\(f(top + ph))' stroke='#555' stroke-dasharray='4 3'/>"
            s += "<text x='\(f(px(marker.x) + 3))' y='\(f(top + ph - 4))'>\(EvaluationReport.escape(marker.label))</text>"
        }
        for (k, line) in series.enumerated() {
            if line.dots {
                for p in line.points { s += "<circle cx='\(f(px(p.0)))' cy='\(f(py(p.1)))' r='2.6' fill='\(line.color)'/>" }
            } else {
                let points = line.points.map { "\(f(px($0.0))),\(f(py($0.1)))" }.joined(separator: " ")
                s += "<polyline fill='none' stroke='\(line.color)' stroke-width='1.6' points='\(points)'/>"
                if line.points.count == 1, let p = line.points.first {
                    s += "<circle cx='\(f(px(p.0)))' cy='\(f(py(p.1)))' r='3' fill='\(line.color)'/>"
                }
            }
            let ly = top + 12 + Double(k) * 14
            s += "<line x1='\(f(width - right - 150))' y1='\(f(ly - 4))' x2='\(f(width - right - 132))' y2='\(f(ly - 4))' stroke='\(line.color)' stroke-width='2'/>"
            s += "<text x='\(f(width - right - 128))' y='\(f(ly))'>\(EvaluationReport.escape(line.name))</text>"
        }
        return s + "</svg>"
    }

    private func f(_ v: Double) -> String { String(format: "%.1f", v) }

    /// Five ticks across the range; for frame indices, whole frames only (a 3-frame sequence gets 0, 1, 2, 3).
    func xTicks(_ x0: Double, _ x1: Double) -> [Double] {
        guard integerX else { return (0...4).map { x0 + (x1 - x0) * Double($0) / 4 } }
        let step = max(1, ((x1 - x0) / 4).rounded(.up))
        return Array(stride(from: x0.rounded(.up), through: x1, by: step))
    }

    static func label(_ v: Double) -> String {
        abs(v) >= 100 || v == v.rounded() ? String(format: "%.0f", v) : String(format: abs(v) >= 10 ? "%.1f" : "%.2f", v)
    }

    /// 1, 2 or 5 times a power of ten, at least `v`.
    static func niceCeiling(_ v: Double) -> Double {
        let p = pow(10, floor(log10(v)))
        return [1.0, 2, 5, 10].map { $0 * p }.first { $0 >= v } ?? 10 * p
    }
}
