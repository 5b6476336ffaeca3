import Foundation
import RephotoKit

/// `session.html` of `rephoto evaluate --session`: one self-contained page (inline SVG and CSS, no scripts) with,
/// per sequence and over the frames, where each answer came from, the rotation and step errors, the tracks, the
/// time per frame (robust and tracked apart), where the session converged, and the hints as a person read them.
public enum SessionReport {
    /// The answer sources in the order of the legend, with their colours.
    static let sources: [(String, String)] = [("robust", "#1f77b4"), ("tracked", "#2ca02c"), ("held", "#ff7f0e"), ("sensor", "#9467bd"), ("failed", "#d62728")]

    public static func html(summary: SessionEvaluationSummary, rows: [SessionRow], title: String = "Rephoto session evaluation") -> String {
        let e = EvaluationReport.escape
        var body = "<h1>\(e(title))</h1>\n" + (summary.provenance?.html ?? "")
        body += "<p>Each sequence runs twice, in frame order: <b>session</b> as configured (Lucas-Kanade tracking between robust updates), "
        body += "and <b>robust</b> with a robust update on every frame, the reference the session is measured against.</p>\n"
        body += table(summary)
        if !summary.brokenSequences.isEmpty {
            body += "<h2>Sequences not evaluated</h2><ul>" + summary.brokenSequences.map { "<li><code>\(e($0.path))</code>: \(e($0.error))</li>" }.joined() + "</ul>\n"
        }
        let names = Set(rows.map(\.sequence)).sorted()
        for name in names {
            let session = rows.filter { $0.sequence == name && $0.run == "session" }.sorted { $0.index < $1.index }
            let robust = rows.filter { $0.sequence == name && $0.run == "robust" }.sorted { $0.index < $1.index }
            let converged = session.first(where: \.converged).map { (x: Double($0.index), label: "converged") }
            body += "<section><h2>\(e(name))</h2>\n"
            body += sourceStrip([("session", session), ("robust", robust)])
            body += "<div class=plots>"
            body += errorPlot(session, robust, converged: converged)
            body += timePlot(session, converged: converged)
            body += tracksPlot(session, converged: converged)
            body += "</div>\n"
            body += hintStrip(session)
            body += "</section>\n"
        }
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(e(title))</title>
            <style>
            body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1240px}
            table{border-collapse:collapse;font-size:13px;margin:8px 0}th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}
            th:first-child,td:first-child,th:nth-child(2),td:nth-child(2){text-align:left}.plots{display:flex;flex-wrap:wrap;gap:16px}
            svg text{font-size:11px;fill:#333}section{border-top:1px solid #ddd;margin-top:18px}
            .hints{display:flex;flex-wrap:wrap;gap:6px;margin:10px 0}.hint{width:168px;border:1px solid #ccc;border-left-width:6px;padding:3px 6px;font-size:12px}
            .hint b{font-weight:600}.hint .told{color:#000}.hint .quiet{color:#888}
            \(Provenance.css)
            </style></head><body>
            \(body)
            </body></html>

            """
    }

    static func table(_ summary: SessionEvaluationSummary) -> String {
        func f(_ v: Double?, _ d: Int = 1) -> String { v.map { String(format: "%.\(d)f", $0) } ?? "–" }
        var out = "<table><tr><th>sequence</th><th>run</th><th>frames</th><th>robust</th><th>tracked</th><th>held</th><th>failed</th>"
        out += "<th>ms tracked p50 / p95</th><th>ms robust p50</th><th>mAA@10</th><th>confidently wrong</th><th>step error ° p50</th><th>converged at frame</th></tr>\n"
        let names = Set((summary.runs["session"] ?? [:]).keys).subtracting(["all"]).sorted() + ["all"]
        for name in names {
            for run in ["session", "robust"] {
                guard let s = summary.runs[run]?[name] else { continue }
                out += "<tr><td>\(EvaluationReport.escape(name))</td><td>\(run)</td><td>\(s.frames)</td><td>\(s.robustFrames)</td><td>\(s.trackedFrames)</td>"
                out += "<td>\(s.heldFrames)</td><td>\(s.failedFrames)</td><td>\(f(s.medianTrackedMs)) / \(f(s.p95TrackedMs))</td><td>\(f(s.medianRobustMs))</td>"
                out += "<td>\(f(s.maa10, 3))</td><td>\(s.confidentWrong)</td><td>\(f(s.medianStepErrorDegrees))</td><td>\(s.firstConvergedFrame.map(String.init) ?? "–")</td></tr>\n"
            }
        }
        return out + "</table>\n"
    }

    /// One coloured cell per frame and run: where each answer came from; frame numbers below.
    static func sourceStrip(_ runs: [(String, [SessionRow])]) -> String {
        let frames = runs.flatMap { $0.1.map(\.index) }
        guard let first = frames.min(), let last = frames.max() else { return "" }
        let left = 64.0, cell = min(18.0, max(3.0, 1000.0 / Double(last - first + 1))), rowHeight = 16.0
        let width = max(left + cell * Double(last - first + 1) + 10, left + 74 * Double(sources.count)), height = 22 + rowHeight * Double(runs.count) + 30
        var s = "<svg width='\(Int(width))' height='\(Int(height))' role='img'><rect width='100%' height='100%' fill='white'/>"
        s += "<text x='0' y='12' font-weight='bold'>Answer source per frame</text>"
        for (k, (run, rows)) in runs.enumerated() {
            let y = 20 + rowHeight * Double(k)
            s += "<text x='0' y='\(y + 11)'>\(run)</text>"
            for row in rows {
                let color = sources.first { $0.0 == row.sourceText }?.1 ?? "#999"
                s += "<rect x='\(left + cell * Double(row.index - first))' y='\(y)' width='\(max(1, cell - 1))' height='\(rowHeight - 3)' fill='\(color)'><title>frame \(row.index): \(row.sourceText)</title></rect>"
            }
        }
        let axis = 20 + rowHeight * Double(runs.count) + 12
        let step = max(1, Int((Double(last - first) / 8).rounded(.up)))
        for index in stride(from: first, through: last, by: step) {
            s += "<text x='\(left + cell * (Double(index - first) + 0.5))' y='\(axis)' text-anchor='middle'>\(index)</text>"
        }
        var x = left
        for (name, color) in sources {
            s += "<rect x='\(x)' y='\(axis + 6)' width='10' height='10' fill='\(color)'/><text x='\(x + 14)' y='\(axis + 15)'>\(name)</text>"
            x += 74
        }
        return s + "</svg>\n"
    }

    static func errorPlot(_ session: [SessionRow], _ robust: [SessionRow], converged: (x: Double, label: String)?) -> String {
        func series(_ name: String, _ color: String, _ rows: [SessionRow], _ path: KeyPath<SessionRow, Double?>) -> Plot.Series? {
            let points = rows.compactMap { r in r[keyPath: path].map { (Double(r.index), $0) } }
            return points.isEmpty ? nil : Plot.Series(name: name, color: color, points: points)
        }
        let all = [series("session rotation", "#1f77b4", session, \.rotationErrorDegrees), series("session step", "#ff7f0e", session, \.stepErrorDegrees),
                   series("robust rotation", "#aaaaaa", robust, \.rotationErrorDegrees)].compactMap { $0 }
        guard !all.isEmpty else { return "" }
        return Plot(title: "Rotation and step errors per frame", xLabel: "frame", yLabel: "error, degrees", series: all, integerX: true, marker: converged).svg
    }

    /// Time on the answer path per frame, robust and tracked frames apart; a deferred robust update's own time beside.
    static func timePlot(_ session: [SessionRow], converged: (x: Double, label: String)?) -> String {
        func dots(_ name: String, _ color: String, _ rows: [SessionRow], _ value: (SessionRow) -> Double?) -> Plot.Series? {
            let points = rows.compactMap { r in value(r).map { (Double(r.index), $0) } }
            return points.isEmpty ? nil : Plot.Series(name: name, color: color, points: points, dots: true)
        }
        let all = [dots("tracked frame", "#2ca02c", session.filter { $0.source == .tracked }) { $0.timeMs },
                   dots("robust frame", "#1f77b4", session.filter { $0.source == .robust }) { $0.timeMs },
                   dots("held / sensor / failed", "#ff7f0e", session.filter { $0.source != .tracked && $0.source != .robust }) { $0.timeMs },
                   dots("robust update's own", "#9467bd", session) { $0.robustMs }].compactMap { $0 }
        guard !all.isEmpty else { return "" }
        return Plot(title: "Time per frame", xLabel: "frame", yLabel: "milliseconds", series: all, integerX: true, marker: converged).svg
    }

    static func tracksPlot(_ session: [SessionRow], converged: (x: Double, label: String)?) -> String {
        let points = session.compactMap { r in r.tracks.map { (Double(r.index), Double($0)) } }
        guard !points.isEmpty else { return "" }
        return Plot(title: "Tracked correspondences per frame", xLabel: "frame", yLabel: "tracks", series: [Plot.Series(name: "tracks", color: "#17becf", points: points)],
                    integerX: true, marker: converged).svg
    }

    /// The session's frames as cards, in order: frame, source, time, and what the person was told.
    static func hintStrip(_ session: [SessionRow]) -> String {
        guard !session.isEmpty else { return "" }
        var s = "<h3>What the person was told, frame by frame (session run)</h3><div class=hints>"
        for row in session {
            let color = sources.first { $0.0 == row.sourceText }?.1 ?? "#999"
            let told = row.hints.isEmpty
                ? "<span class=quiet>\(row.converged ? "converged: hold still" : row.source == nil ? "no answer" : "nothing to do")</span>"
                : "<span class=told>\(EvaluationReport.escape(row.hints))</span>"
            let error = row.rotationErrorDegrees.map { String(format: ", rot. err %.2f°", $0) } ?? ""
            s += "<div class=hint style='border-left-color:\(color)'><b>#\(row.index)</b> \(row.sourceText), \(String(format: "%.1f", row.timeMs)) ms\(error)<br>\(told)</div>"
        }
        return s + "</div>\n"
    }
}
