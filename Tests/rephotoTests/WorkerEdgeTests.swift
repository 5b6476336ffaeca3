import Foundation
import Glibc
import RephotoTestSupport
import Testing

/// `rephoto serve` at its edges, over real sockets: slow uploads, a flood of idle connections, HTTP/1.0, a
/// rotated token, shutdown with uploads still arriving.
@Suite(.serialized) struct WorkerEdgeTests {
    static func port(_ salt: Int32) -> Int { 20_000 + Int((getpid() + salt) % 20_000) }

    /// A connection from `source` (any address of 127/8 is this machine), reads timing out after `timeout` s.
    static func connection(_ port: Int, from source: String = "127.0.0.1", timeout: Int = 10) -> Int32 {
        let socket = loopbackConnection(port, from: source, timeout: timeout)
        #expect(socket != nil, "no connection to port \(port)")
        return socket ?? -1
    }

    /// Everything the server sends until it closes the connection or `timeout` passes; and whether it closed.
    static func readToEnd(_ socket: Int32) -> (text: String, closed: Bool) {
        var all = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(socket, &buffer, buffer.count, 0)
            if n > 0 { all += buffer.prefix(n); continue }
            return (String(decoding: all, as: UTF8.self), n == 0)
        }
    }

    /// CPU time a process has used, seconds.
    static func cpuSeconds(_ process: Process) throws -> Double {
        let fields = try String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8).split(separator: ")").last!.split(separator: " ")
        return (Double(fields[11])! + Double(fields[12])!) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static let uploadHeader = "POST /v1/retakes/score HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n--b"

    /// One client address holds at most --uploads-per-client of the upload slots (ten slow senders from one
    /// address had held them all, and every other upload got 503 for 30 s); another address still gets one.
    /// A body must keep --min-body-rate from its first byte (after the allowance) and arrive within
    /// --body-timeout, whatever its pace; SIGTERM cuts uploads still arriving and exits without waiting for
    /// them (5 slow uploads held the exit for 27 s).
    @Test func slowUploadsHoldSlotsBrieflyAndNotAll() async throws {
        let port = Self.port(31)
        let process = try await ServeCommandTests.worker(port: port, ["--concurrency", "1", "--queue-length", "3", "--min-body-rate", "1",
                                                                      "--body-timeout", "3"])
        defer { if process.isRunning { process.terminate() } }
        // Capacity 4, two per address by default.
        let held = [Self.connection(port), Self.connection(port)]
        for socket in held { #expect(send(socket, Self.uploadHeader, Self.uploadHeader.utf8.count, 0) > 0) }
        try await Task.sleep(for: .milliseconds(300))
        let third = Self.connection(port)
        defer { close(third) }
        let refused = ServeCommandTests.exchange(third, Self.uploadHeader)
        #expect(refused.hasPrefix("HTTP/1.1 503") && refused.contains("2 uploads from this client address in progress already (--uploads-per-client)"),
                "\(refused)")
        let other = Self.connection(port, from: "127.0.0.2")
        defer { close(other) }
        #expect(send(other, Self.uploadHeader, Self.uploadHeader.utf8.count, 0) > 0)
        // Accepted: no answer while its body is awaited (a refusal would come at once).
        var wait = timeval(tv_sec: 0, tv_usec: 500_000)
        setsockopt(other, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        var byte: UInt8 = 0
        #expect(recv(other, &byte, 1, 0) < 0 && errno == EAGAIN)

        // The body timeout closes the held uploads, though they trickle faster than --min-body-rate 1.
        let began = ContinuousClock.now
        var closed = 0
        for socket in held {
            for _ in 0..<40 {
                _ = send(socket, "x", 1, Int32(MSG_NOSIGNAL))
                var b: UInt8 = 0
                var short = timeval(tv_sec: 0, tv_usec: 200_000)
                setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &short, socklen_t(MemoryLayout<timeval>.size))
                let n = recv(socket, &b, 1, 0)
                if n == 0 || (n < 0 && errno != EAGAIN) || n > 0 { closed += 1; break }
            }
            close(socket)
        }
        #expect(closed == 2)
        #expect(ContinuousClock.now - began < .seconds(6), "\(ContinuousClock.now - began)")

        // SIGTERM with slow uploads open: they are cut and the worker exits at once.
        let slow = (0..<3).map { _ in Self.connection(port, from: "127.0.0.3") }
        for socket in slow.prefix(2) { #expect(send(socket, Self.uploadHeader, Self.uploadHeader.utf8.count, 0) > 0) }
        try await Task.sleep(for: .milliseconds(300))
        let stop = ContinuousClock.now
        kill(process.processIdentifier, SIGTERM)
        while process.isRunning, ContinuousClock.now - stop < .seconds(20) { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!process.isRunning && process.terminationStatus == 0)
        // The third connection has sent nothing yet: it has no request to finish either (it held the exit for
        // the idle timeout once connections began in the WebSocket-upgradable pipeline).
        #expect(ContinuousClock.now - stop < .seconds(5), "\(ContinuousClock.now - stop)")
        for socket in slow { close(socket) }
    }

    /// A body that sends nothing at all is as far behind --min-body-rate as one that trickles: it was checked only
    /// as parts arrived, so a declared body never sent held its upload slot for the whole idle timeout (30 s).
    @Test func aSilentBodyIsCutByTheRateRule() async throws {
        let port = Self.port(47)
        let process = try await ServeCommandTests.worker(port: port, [])
        defer { if process.isRunning { process.terminate() } }
        let silent = Self.connection(port, timeout: 20)
        defer { close(silent) }
        let header = "POST /v1/retakes/score HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 10000000\r\n\r\n"
        #expect(send(silent, header, header.utf8.count, 0) == header.utf8.count)
        let start = ContinuousClock.now
        let (_, closed) = Self.readToEnd(silent)
        #expect(closed)
        // The allowance is 5 s; the check runs every half second.
        #expect(ContinuousClock.now - start < .seconds(8), "\(ContinuousClock.now - start)")
    }

    /// A client that pipelines thousands of requests and reads no answer: it held a core for minutes (answers
    /// to closed connections included), starved /healthz, and held SIGTERM's drain for as long as it stayed.
    /// Now reading pauses at 16 unanswered, the connection closes past 128, and one whose answers cannot be sent
    /// for --idle-timeout is closed: /healthz answers and SIGTERM ends within it.
    @Test func aClientThatReadsNoAnswerIsBounded() async throws {
        let port = Self.port(53)
        let process = try await ServeCommandTests.worker(port: port, ["--idle-timeout", "2"])
        defer { if process.isRunning { process.terminate() } }
        var flooders: [Int32] = []
        defer { for socket in flooders { close(socket) } }
        let burst = String(repeating: "GET /openapi.yaml HTTP/1.1\r\nHost: x\r\n\r\n", count: 100)
        for _ in 0..<8 {
            let socket = Self.connection(port)
            var small: Int32 = 4096
            setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            var nonblocking = timeval(tv_sec: 0, tv_usec: 100_000)
            setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &nonblocking, socklen_t(MemoryLayout<timeval>.size))
            for _ in 0..<20 { _ = send(socket, burst, burst.utf8.count, Int32(MSG_NOSIGNAL)) }
            flooders.append(socket)
        }
        try await Task.sleep(for: .seconds(1))
        let health = Self.connection(port, timeout: 3)
        defer { close(health) }
        let answer = ServeCommandTests.exchange(health, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        let stop = ContinuousClock.now
        kill(process.processIdentifier, SIGTERM)
        while process.isRunning, ContinuousClock.now - stop < .seconds(30) { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!process.isRunning)
        #expect(ContinuousClock.now - stop < .seconds(6), "\(ContinuousClock.now - stop)")
    }

    /// Under a descriptor limit of 128, 300 idle connections had the worker spin a core in accept with
    /// /healthz unanswered and nothing logged. Now at most --max-connections are open (by default half the
    /// limit), the idle ones longest quiet make room, /healthz answers, the worker stays idle, and it logs once.
    @Test func aFloodOfIdleConnectionsLeavesRoomForHealthChecks() async throws {
        let flood = try await Self.flood(port: Self.port(37), descriptors: 128, [])
        #expect(flood.cpu < 1.0)  // spinning in accept took 2.94 CPU-seconds of 3
        #expect(flood.health.hasPrefix("HTTP/1.1 200"), "\(flood.health)")
        #expect(flood.descriptors < 128)
        #expect(flood.metrics.contains("rephoto_connections_evicted_total"), "\(flood.metrics.prefix(300))")
        #expect(flood.log.components(separatedBy: "at --max-connections 64").count == 2, "\(flood.log)")
    }

    /// A worker under a descriptor limit, flooded with 300 idle connections (closed at the end): the CPU it
    /// used over 3 s, then /healthz's and /metrics' answers, its descriptors, and its log.
    static func flood(port: Int, descriptors: Int, _ arguments: [String]) async throws
        -> (cpu: Double, health: String, metrics: String, descriptors: Int, log: String) {
        let log = try Scratch.directory().appendingPathComponent("worker.log").path
        let process = try await ServeCommandTests.worker(port: port, arguments, descriptors: descriptors, log: log)
        defer { if process.isRunning { process.terminate() } }
        let idle = (0..<300).map { _ in Self.connection(port, timeout: 1) }
        defer { for socket in idle { close(socket) } }
        try await Task.sleep(for: .seconds(2))
        let cpu = try Self.cpuSeconds(process)
        try await Task.sleep(for: .seconds(3))
        let used = try Self.cpuSeconds(process) - cpu
        let health = Self.connection(port)
        defer { close(health) }
        let answer = ServeCommandTests.exchange(health, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let open = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd").count
        let metrics = ServeCommandTests.exchangeWhole(health, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        return (used, answer, metrics, open, try String(contentsOfFile: log, encoding: .utf8))
    }

    /// With --max-connections set past the descriptor limit, accept runs out of descriptors: NIO retried it
    /// without pause (a core spinning, 2 CPU-s in 3 s, /healthz unanswered, nothing logged). Now the limit is
    /// lowered to what fits, logged once, the idle connection longest quiet makes room, and /healthz answers.
    @Test func runningOutOfDescriptorsIsLoggedOnceAndRecovered() async throws {
        let flood = try await Self.flood(port: Self.port(39), descriptors: 64, ["--max-connections", "500"])
        #expect(flood.cpu < 1.0)
        #expect(flood.health.hasPrefix("HTTP/1.1 200"), "\(flood.health)")
        #expect(flood.log.components(separatedBy: "out of file descriptors; at most").count == 2, "\(flood.log)")
    }

    /// HTTP/1.0 closes after the answer unless asked to keep alive, and is answered in HTTP/1.0 (the answer was
    /// HTTP/1.1 and the connection held for the idle timeout, so a client reading to the end hung).
    @Test func http10ClosesByDefault() async throws {
        let port = Self.port(41)
        let process = try await ServeCommandTests.worker(port: port, [])
        defer { if process.isRunning { process.terminate() } }
        let plain = Self.connection(port, timeout: 5)
        defer { close(plain) }
        let start = ContinuousClock.now
        #expect(send(plain, "GET /healthz HTTP/1.0\r\n\r\n", 25, 0) == 25)
        let (text, closed) = Self.readToEnd(plain)
        #expect(text.hasPrefix("HTTP/1.0 200") && text.hasSuffix(#"{"status":"alive"}"#) && closed, "\(text)")
        #expect(ContinuousClock.now - start < .seconds(2))
        let kept = Self.connection(port, timeout: 1)
        defer { close(kept) }
        let first = ServeCommandTests.exchange(kept, "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(first.hasPrefix("HTTP/1.0 200") && first.lowercased().contains("connection: keep-alive"), "\(first)")
        let second = ServeCommandTests.exchange(kept, "GET /readyz HTTP/1.0\r\n\r\n")
        #expect(second.hasPrefix("HTTP/1.0 200") && second.contains("ready"), "\(second)")
    }

    /// A token file others can read is taken with a warning, as ssh does; the token is read again on SIGHUP
    /// (rotation without a restart), and a file that no longer holds a valid token leaves the old one in force.
    /// Request ids are random, not a count a client could guess.
    @Test func tokensRotateOnHangUpAndRequestIdsAreRandom() async throws {
        let port = Self.port(43)
        let file = try Scratch.directory().appendingPathComponent("token").path
        let first = "first-token-0123456789", second = "second-token-0123456789"
        try first.write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o644)
        let warned = try CLI.run(["serve", "--port", "\(port)", "--token-file", file, "--concurrency", "0"])
        #expect(warned.stderr.contains("rephoto serve: warning: --token-file \(file): readable or writable by others (mode 0644); chmod 600 it"), "\(warned.stderr)")
        chmod(file, 0o600)
        let process = try await ServeCommandTests.worker(port: port, ["--token-file", file])
        defer { if process.isRunning { process.terminate() } }
        func status(_ token: String) -> (String, String?) {
            let socket = Self.connection(port)
            defer { close(socket) }
            let answer = ServeCommandTests.exchange(socket, "GET /v1/references/\(String(repeating: "a", count: 64)) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n")
            let id = answer.split(separator: "\r\n").first { $0.lowercased().hasPrefix("x-request-id: ") }.map { String($0.dropFirst(14)) }
            return (String(answer.prefix(12)), id)
        }
        #expect(status(first).0 == "HTTP/1.1 404")
        try second.write(toFile: file, atomically: true, encoding: .utf8)
        kill(process.processIdentifier, SIGHUP)
        try await Task.sleep(for: .milliseconds(500))
        #expect(status(first).0 == "HTTP/1.1 401")
        #expect(status(second).0 == "HTTP/1.1 404")
        try "short".write(toFile: file, atomically: true, encoding: .utf8)
        kill(process.processIdentifier, SIGHUP)
        try await Task.sleep(for: .milliseconds(500))
        #expect(process.isRunning && status(second).0 == "HTTP/1.1 404")

        let ids = (0..<20).compactMap { _ in status(second).1 }
        #expect(ids.count == 20 && Set(ids).count == 20)
        #expect(ids.allSatisfy { $0.count == 16 && $0.allSatisfy(\.isHexDigit) }, "\(ids)")
        let values = ids.compactMap { UInt64($0, radix: 16) }
        #expect(zip(values, values.dropFirst()).filter { $1 &- $0 < 1000 }.count < 3, "\(ids)")
    }
}
