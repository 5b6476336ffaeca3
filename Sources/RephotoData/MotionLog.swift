import CSV
import Foundation
import RephotoKit

/// A phone's attitude over time, as recorder apps write it beside a video, resampled to frame times by SLERP
/// (`rephoto import video --motion`). Formats, told apart by their header (datasets/README.md, "Phone videos"):
/// - `plain`: `timestamp,qw,qx,qy,qz`, seconds on the video's clock, CoreMotion's quaternion convention;
/// - `coremotion`: SensorLog's CSV (iOS): `motionTimestamp_sinceReboot(s)` and `motionQuaternionW(R)`, `...X(R)`,
///   `...Y(R)`, `...Z(R)`; other columns are ignored;
/// - `android`: `timestamp_ns,x,y,z` with an optional `w`: SensorEvent.timestamp and the values of a rotation vector
///   sensor (w is sqrt(1 - x² - y² - z²) when absent);
/// - `sensorlogger`: Sensor Logger's `Orientation.csv`, `time,seconds_elapsed,qz,qy,qx,qw,...` (time in ns since the
///   epoch; `seconds_elapsed` from the recording's start is the clock used), CoreMotion's quaternion convention.
/// Timestamps are bounded (|t| <= 1e10 s, samples at most an hour apart): a log 1e300 s long is no recording.
public struct MotionLog: Sendable {
    public enum Format: String, CaseIterable, Sendable {
        case plain, coremotion, android, sensorlogger
    }

    /// The largest timestamp magnitude (seconds; 2286 on the Unix epoch) and the longest gap between samples.
    public static let maxTime = 1e10, maxGap = 3600.0

    public struct Sample: Sendable, Equatable {
        /// Seconds on the log's clock.
        public var time: Double
        public var attitude: Quaternion
    }

    public var format: Format
    /// Strictly increasing in time.
    public var samples: [Sample]
    /// The frame the format's quaternions are in.
    public var attitudeFrame: AttitudeReferenceFrame { format == .android ? .androidRotationVector : .xArbitraryZVertical }

    /// 100 Hz for ten hours.
    static let maxSamples = 3_600_000

    public static func load(_ path: String) throws -> MotionLog {
        let data = try readSmallFile(path, limit: 512 << 20)
        return try parse(String(decoding: data, as: UTF8.self), path: path)
    }

    public static func parse(_ text: String, path: String) throws -> MotionLog {
        // A spreadsheet's byte-order mark would hide the first column's name.
        let text = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
        let reader: CSVReader
        do {
            reader = try CSVReader(string: text, hasHeaderRow: true, trimFields: true)
        } catch {
            throw RephotoError.badInput("\(path): empty or not readable as UTF-8 CSV")
        }
        let header = reader.headerRow ?? []
        let position = Dictionary(header.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        let format: Format, columns: [String?]
        if Set(["timestamp", "qw", "qx", "qy", "qz"]).isSubset(of: position.keys) {
            (format, columns) = (.plain, ["timestamp", "qw", "qx", "qy", "qz"])
        } else if Set(["motionTimestamp_sinceReboot(s)", "motionQuaternionW(R)", "motionQuaternionX(R)", "motionQuaternionY(R)",
                       "motionQuaternionZ(R)"]).isSubset(of: position.keys) {
            (format, columns) = (.coremotion, ["motionTimestamp_sinceReboot(s)", "motionQuaternionW(R)", "motionQuaternionX(R)",
                                               "motionQuaternionY(R)", "motionQuaternionZ(R)"])
        } else if Set(["seconds_elapsed", "qw", "qx", "qy", "qz"]).isSubset(of: position.keys) {
            (format, columns) = (.sensorlogger, ["seconds_elapsed", "qw", "qx", "qy", "qz"])
        } else if Set(["timestamp_ns", "x", "y", "z"]).isSubset(of: position.keys) {
            (format, columns) = (.android, ["timestamp_ns", position["w"] == nil ? nil : "w", "x", "y", "z"])
        } else {
            throw RephotoError.badInput("\(path) line 1: not a motion log rephoto reads: the header needs timestamp,qw,qx,qy,qz (plain), Sensor Logger's seconds_elapsed,qz,qy,qx,qw (Orientation.csv), SensorLog's motionTimestamp_sinceReboot(s) and motionQuaternionW(R)...Z(R) (coremotion), or timestamp_ns,x,y,z[,w] (android)")
        }
        var samples: [Sample] = []
        var line = 1
        while let row = reader.next() {
            line += 1
            if row.count == 1 && row[0].isEmpty { continue }
            guard samples.count < maxSamples else { throw RephotoError.badInput("\(path) line \(line): more than \(maxSamples) samples") }
            func number(_ column: String?) throws -> Double? {
                guard let column, let index = position[column] else { return nil }
                guard index < row.count, let value = decimalNumber(row[index]), value.isFinite else {
                    throw RephotoError.badInput("\(path) line \(line): \(column) '\(index < row.count ? String(row[index].prefix(40)) : "")' is not a finite number")
                }
                return value
            }
            var time = try number(columns[0])!
            if format == .android { time /= 1e9 }
            let x = try number(columns[2])!, y = try number(columns[3])!, z = try number(columns[4])!
            var w = try number(columns[1])
            if w == nil {
                let rest = 1 - x * x - y * y - z * z
                guard rest > -0.02 else { throw RephotoError.badInput("\(path) line \(line): x, y, z of length over 1 are no rotation vector") }
                w = max(0, rest).squareRoot()
            }
            let q = Quaternion(w: w!, x: x, y: y, z: z)
            guard abs(q.norm - 1) <= 0.01 else {
                throw RephotoError.badInput("\(path) line \(line): attitude \(q) has norm \(String(format: "%.4f", q.norm)), not within 1 % of 1")
            }
            guard abs(time) <= maxTime else {
                throw RephotoError.badInput(String(format: "%@ line %d: timestamp %.4g s is beyond %.0e s: not seconds (or nanoseconds) of a clock", path, line, time, maxTime))
            }
            if let last = samples.last, time - last.time > maxGap {
                throw RephotoError.badInput(String(format: "%@ line %d: %.4g s after the sample before it, more than an hour: no motion between them can be resampled", path, line, time - last.time))
            }
            if let last = samples.last, time <= last.time {
                throw RephotoError.badInput("\(path) line \(line): the clock runs backwards or stands still (\(time) s after \(last.time) s)")
            }
            samples.append(Sample(time: time, attitude: q.normalized))
        }
        guard samples.count >= 2 else { throw RephotoError.badInput("\(path): \(samples.count) samples; a motion log needs at least 2") }
        return MotionLog(format: format, samples: samples)
    }

    /// The attitude at `videoTime` seconds on the video's clock, whose time is the log's plus `clockOffset`: SLERP between
    /// the samples around it. Throws when the log does not cover that time (within half its median sample spacing).
    public func attitude(atVideoTime videoTime: Double, clockOffset: Double) throws -> Quaternion {
        let t = videoTime - clockOffset
        let first = samples.first!.time, last = samples.last!.time
        let slack = medianSpacing / 2
        guard t >= first - slack, t <= last + slack else {
            throw RephotoError.badInput(String(format: "the motion log covers %.3f-%.3f s of the video's clock (--clock-offset %g), a frame is at %.3f s",
                                               first + clockOffset, last + clockOffset, clockOffset, videoTime))
        }
        var lo = 0, hi = samples.count - 1
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if samples[mid].time <= t { lo = mid } else { hi = mid }
        }
        let a = samples[lo], b = samples[hi]
        let f = min(1, max(0, (t - a.time) / (b.time - a.time)))
        return a.attitude.slerp(to: b.attitude, t: f)
    }

    var medianSpacing: Double {
        let gaps = zip(samples.dropFirst(), samples).map { $0.time - $1.time }.sorted()
        return gaps[gaps.count / 2]
    }
}
