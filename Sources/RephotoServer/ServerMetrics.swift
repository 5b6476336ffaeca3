import Foundation
import Prometheus

/// The worker's Prometheus metrics (GET /metrics): requests by route and status, latency, requests in
/// flight, queue depth, reference cache hits and misses, reference store size,
/// connections and upload slots.
final class ServerMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    let inFlight: Gauge
    let queueDepth: Gauge
    let abandoned: Counter
    let cacheHits: Counter
    let cacheMisses: Counter
    let storeEntries: Gauge
    let storeBytes: Gauge
    let derivedBytes: Gauge
    let derivedEvicted: Counter
    let connections: Gauge
    let connectionsEvicted: Counter
    let acceptPaused: Counter
    let acceptFailed: Counter
    let latency: DurationHistogram
    let sessionsOpen: Gauge
    let sessionFrames: Counter
    let sessionFramesSkipped: Counter
    let sessionRobustUpdates: Counter
    let sessionFrameLatency: DurationHistogram

    static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "rephoto", metricName: metric, unitName: unit, helpText: help)
    }

    init() {
        inFlight = registry.makeGauge(descriptor: Self.name("requests_in_flight", "", "Requests being handled"))
        queueDepth = registry.makeGauge(descriptor: Self.name("compute_queue_depth", "", "Pipelines waiting for a compute thread"))
        abandoned = registry.makeCounter(descriptor: Self.name("compute_abandoned", "total", "Queued pipelines dropped because their request had timed out"))
        cacheHits = registry.makeCounter(descriptor: Self.name("reference_cache_hits", "total", "Prepared references found in memory"))
        cacheMisses = registry.makeCounter(descriptor: Self.name("reference_cache_misses", "total", "Prepared references detected again"))
        storeEntries = registry.makeGauge(descriptor: Self.name("reference_store_entries", "", "References in the on-disk store"))
        storeBytes = registry.makeGauge(descriptor: Self.name("reference_store", "bytes", "Bytes of the on-disk store"))
        derivedBytes = registry.makeGauge(descriptor: Self.name("reference_store_derived", "bytes", "Bytes of the store's derived files (prepared features), bounded by --store-bytes"))
        derivedEvicted = registry.makeCounter(descriptor: Self.name("reference_store_evicted", "total", "Derived files evicted from the store under --store-bytes"))
        connections = registry.makeGauge(descriptor: Self.name("connections_open", "", "Open client connections"))
        connectionsEvicted = registry.makeCounter(descriptor: Self.name("connections_evicted", "total", "Idle connections closed at --max-connections to make room"))
        acceptPaused = registry.makeCounter(descriptor: Self.name("connections_accept_paused", "total", "Times accepting paused at --max-connections with every connection busy"))
        acceptFailed = registry.makeCounter(descriptor: Self.name("connections_accept_failed", "total", "Accepts that failed for want of file descriptors"))
        sessionsOpen = registry.makeGauge(descriptor: Self.name("sessions_open", "", "Guidance sessions open"))
        sessionFrames = registry.makeCounter(descriptor: Self.name("session_frames", "total", "Guidance-session frames answered"))
        sessionFramesSkipped = registry.makeCounter(descriptor: Self.name("session_frames_skipped", "total",
                                                                          "Guidance-session frames dropped because the session was computing an earlier one"))
        sessionRobustUpdates = registry.makeCounter(descriptor: Self.name("session_robust_updates", "total",
                                                                          "Guidance-session robust updates started on a compute pipeline, off the answer path"))
        sessionFrameLatency = registry.makeDurationHistogram(
            descriptor: Self.name("session_frame_duration", "seconds", "Guidance-session frame latency, decoding included"),
            buckets: [.milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
                      .seconds(1), .seconds(2), .seconds(5)])
        latency = registry.makeDurationHistogram(
            descriptor: Self.name("request_duration", "seconds", "Request latency"),
            buckets: [.milliseconds(5), .milliseconds(25), .milliseconds(100), .milliseconds(250), .milliseconds(500),
                      .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30)])
    }

    func request(route: String, status: Int) {
        registry.makeCounter(descriptor: Self.name("requests", "total", "Requests by route and status"),
                             labels: [("route", route), ("status", String(status))]).increment()
    }

    /// A live session's socket refused at the level of its bytes (`SocketIntake`), by the error's code.
    func socketRefused(_ code: String) {
        registry.makeCounter(descriptor: Self.name("session_sockets_refused", "total", "Session sockets refused by a message's length, the upload budget or its pace"),
                             labels: [("code", code)]).increment()
    }

    func text() -> String {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
