import Foundation
import RephotoKit

/// The short, readable summary `rephoto pose` prints for people.
enum HumanSummary {
    static func text(_ r: PoseResult, reference: String, current: String, detector: DetectorKind) -> String {
        let c = r.counts, m = r.metrics, n = r.navigation
        var lines: [String] = []
        lines.append("reference  \(reference) (\(r.referenceSize.width)x\(r.referenceSize.height))")
        lines.append("current    \(current) (\(r.currentSize.width)x\(r.currentSize.height))")
        lines.append("features   \(detector.rawValue): \(c.keypointsReference) / \(c.keypointsCurrent) keypoints, \(c.matches) matches, \(c.inliersHomography) homography inliers (\(pct(m.inlierRatio)))")
        lines.append("score      \(f(m.score, 1)) / 100   (AFD \(f(m.afdPixels, 1)) px, displacement \(f(m.displacementPercent, 2)) %)")
        if let p = r.pose {
            let t = p.translation.map { "translation [\(f($0.x, 3)), \(f($0.y, 3)), \(f($0.z, 3))]" } ?? "translation undetermined (rotation-only or planar)"
            lines.append("pose       rotation \(f(p.rotationDegrees, 2))°, \(t)")
        }
        if let camera = r.referenceCamera {
            let from = camera.model.name + (camera.model == .rotation ? ": the cameras at one place" : ": the cameras apart")
            lines.append("old camera focal \(f(camera.fx, 0)) px ± \(f(camera.focalSigmaPercent, 1)) % (estimated from \(from)), zoom \(f(camera.zoom, 2))x")
        }
        if let marks = r.marks {
            let unchecked = r.pose == nil ? "no pose to check them against" : "the pose's translation is undetermined"
            let fit = marks.largestPixels.map { "all within \(f($0, 1)) px of the pose" } ?? "not checked (\(unchecked))"
            lines.append("marks      \(marks.count) pairs, \(fit)\(marks.guided ? "; the pose from the pass they guided" : "")")
        }
        lines.append("navigate   " + (n.aligned ? "aligned" : n.hints.joined(separator: "; ")))
        if let s = r.sensor {
            let e = s.euler
            lines.append("sensor     rotation \(f(s.rotationDegrees, 2))° (roll \(f(e.roll, 2))°, pitch \(f(e.pitch, 2))°, yaw \(f(e.yaw, 2))°), point (\(f(s.navigationPoint.x, 0)), \(f(s.navigationPoint.y, 0)))")
        }
        if let c = r.comparison {
            var parts: [String] = []
            if let a = c.rotationAngleDegrees { parts.append("rotations differ by \(f(a, 2))°") }
            if let q = c.quadrilateralErrorPixels { parts.append("quadrilaterals by \(f(q, 1)) px") }
            lines.append("agreement  " + (parts.isEmpty ? "no vision pose to compare" : parts.joined(separator: ", ")))
        }
        let t = r.timings
        let stages: [(String, Double?)] = [("detectCurrent", t.detectCurrent), ("match", t.match), ("homography", t.homography), ("essential", t.essential)]
        let parts = stages.compactMap { name, ms in ms.map { "\(name) \(f($0, 0))" } }
        lines.append("time       \(f(t.total, 0)) ms (\(parts.joined(separator: ", "))); reference detection \(f(t.detectReference, 0)) ms")
        lines += (r.warnings + (r.sensor?.warnings ?? [])).map { "warning    \($0)" }
        return lines.joined(separator: "\n")
    }

    /// Vision failed, attitudes were given: the sensor path's guidance alone.
    static func text(_ r: SensorOnlyResult) -> String {
        let s = r.sensor, e = s.euler
        var lines = ["vision     failed: \(r.visionFailure.message)"]
        lines.append("sensor     rotation \(f(s.rotationDegrees, 2))° (roll \(f(e.roll, 2))°, pitch \(f(e.pitch, 2))°, yaw \(f(e.yaw, 2))°), point (\(f(s.navigationPoint.x, 0)), \(f(s.navigationPoint.y, 0)))")
        lines += s.warnings.map { "warning    \($0)" }
        return lines.joined(separator: "\n")
    }

    private static func f(_ v: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", v) }
    private static func pct(_ v: Double) -> String { String(format: "%.0f%%", v * 100) }
}
