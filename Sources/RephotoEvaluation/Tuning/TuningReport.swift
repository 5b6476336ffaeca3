import Foundation

/// `tuning.html`: one self-contained page (inline SVG and CSS, no scripts) with what made the run, the best trial,
/// the optimisation history, parallel coordinates, each parameter's importance, the Pareto front of the objective
/// against time and the objective against each parameter.
enum TuningReport {
    static func html(_ result: TuningResult, records: [TrialRecord], space: TuningSpace) -> String {
        let e = EvaluationReport.escape
        let objective = result.objective
        var body = "<h1>Rephoto tuning</h1>\n" + (result.provenance?.html ?? "")
        body += "<p>\(result.trials) trials, \(space.strategy.rawValue) search, ranked by <b>\(e(objective.rawValue))</b> (\(objective.higherIsBetter ? "higher" : "lower") is better).</p>\n"
        if let best = result.best {
            body += "<h2>Best: trial \(best.trial), \(e(objective.rawValue)) \(objective.rounded(best.objective))</h2><table><tr><th>parameter</th><th>value</th></tr>"
            body += best.parameters.map { "<tr><td>\(e($0.first ?? ""))</td><td>\(e($0.last ?? ""))</td></tr>" }.joined() + "</table>\n"
            body += "<p>\(best.metrics.failures) of \(best.metrics.frames) frames failed; \(best.metrics.msPerFrame.map { String(format: "%.0f", $0) } ?? "–") ms per frame (median). Exact values: leaderboard.csv, tuning.json.</p>\n"
        }
        if !result.notes.isEmpty { body += "<ul class=notes>" + result.notes.map { "<li>\(e($0))</li>" }.joined() + "</ul>\n" }
        if !result.notes.contains(where: { $0.hasPrefix("tied") }) { body += "<p class=note>Ties: \(e(result.tieRule)).</p>\n" }
        body += "<div class=plots>" + TuningPlots.history(records, objective: objective) + TuningPlots.pareto(records, objective: objective, width: 600, height: 340) + "</div>\n"
        body += TuningPlots.parallelCoordinates(records, dimensions: space.dimensions, objective: objective) + "\n"
        body += TuningPlots.importance(result.importance) + "\n<p class=note>Importance: \(e(result.importanceMethod)).</p>\n"
        body += "<h2>\(e(objective.rawValue)) against each parameter</h2><div class=plots>"
        body += space.dimensions.map { TuningPlots.sensitivityPanel(records, dimension: $0, objective: objective, width: 460, height: 300) }.joined()
        body += "</div>\n"
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>Rephoto tuning</title>
            <style>
            body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1240px}
            table{border-collapse:collapse;font-size:13px;margin:8px 0}th,td{border:1px solid #ccc;padding:3px 7px;text-align:left}
            .plots{display:flex;flex-wrap:wrap;gap:16px;margin:12px 0}svg{margin:6px 0}.note{font-size:12px;color:#555}.notes li{color:#8a4b00}
            \(Provenance.css)
            </style></head><body>
            \(body)
            </body></html>

            """
    }
}
