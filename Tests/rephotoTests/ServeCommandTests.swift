import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc
import RephotoTestSupport
import Testing

/// `rephoto serve` as a process: SIGTERM while requests run, and the stdio mode.
@Suite(.serialized) struct ServeCommandTests {
    static func multipart(_ parts: [(String, Data)]) -> (Data, String) {
        let boundary = "rephoto-test-boundary-3f9a"
        var body = Data()
        for (name, data) in parts {
            body += Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"\(name)\"\r\nContent-Type: application/octet-stream\r\n\r\n".utf8)
            body += data + Data("\r\n".utf8)
        }
        body += Data("--\(boundary)--\r\n".utf8)
        return (body, "multipart/form-data; boundary=\(boundary)")
    }

    static func request(_ url: String, body: Data? = nil, contentType: String? = nil) async throws -> (Int, Data) {
        var request = URLRequest(url: URL(string: url)!)
        request.timeoutInterval = 60
        if let body {
            request.httpMethod = "POST"
            request.httpBody = body
            request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }

    /// Settings that cannot work are refused at start, one line, exit 2: a huge timeout overflowed a Duration
    /// and stopped the worker on its first request; 5,000 pipelines could not all get a thread; hexadecimal
    /// was read as a number (probe).
    @Test func settingsThatCannotWorkAreRefusedAtStart() throws {
        let token = SequenceCommandTests.directory() + ".token"
        try "line-one-of-the-token\nline-two-of-the-token".write(toFile: token, atomically: true, encoding: .utf8)
        let big = token + ".big", empty = token + ".empty"
        try String(repeating: "t", count: 5000).write(toFile: big, atomically: true, encoding: .utf8)
        try "".write(toFile: empty, atomically: true, encoding: .utf8)
        let fifo = token + ".fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let cases: [([String], String)] = [
            (["--request-timeout", "1e300"], "--request-timeout 1e+300 must be 0.001 to 86400 seconds"),
            (["--concurrency", "5000"], "--concurrency 5000 must be 1 to 1024"),
            (["--idle-timeout", "0x10"], "The value '0x10' is invalid for '--idle-timeout <idle-timeout>'"),
            (["--min-body-rate", "0"], "--min-body-rate 0.0 must be at least 1 byte per second"),
            (["--token-file", token], "the token must be printable ASCII without spaces"),
            // /dev/zero was read without end; an empty file said only "cannot read".
            (["--token-file", "/dev/zero"], "--token-file /dev/zero: not a regular file"),
            (["--token-file", big], "--token-file \(big): over 4096 bytes, not a token file"),
            (["--token-file", empty], "--token-file \(empty): the file is empty"),
            (["--token-file", token + ".absent"], "--token-file \(token).absent: no such file"),
            // A FIFO with no writer blocked the start for ever, before the port was bound (probe).
            (["--token-file", fifo], "--token-file \(fifo): not a regular file"),
            (["--token-file", NSTemporaryDirectory()], "a directory"),
            (["--host", ""], "--host '' is empty: name an address"),
            (["--body-timeout", "0.5"], "--body-timeout 0.5 must be 1 to 86400 seconds"),
            (["--uploads-per-client", "0"], "--uploads-per-client 0 must be 1 to 1000000"),
            (["--max-connections", "1"], "--max-connections 1 must be 2 to 1000000"),
            (["--session-max-fps", "0"], "--session-max-fps 0.0 must be 0.1 to 1000 frames per second"),
            (["--session-max-fps", "nan"], "--session-max-fps"),
            (["--store-bytes", "1000"], "--store-bytes 1000 needs --reference-store"),
            (["--sessions-per-client", "0"], "--sessions-per-client 0 must be 1 to 10000"),
        ]
        for (arguments, message) in cases {
            let run = try CLI.run(["serve", "--port", "0"] + arguments)
            #expect(run.status == 2 && run.stderr.contains(message) && run.stderr.filter { $0 == "\n" }.count == 1, "\(arguments): \(run.stderr)")
        }
        // From the environment, the error names the variable the operator set, not a flag they never typed.
        let environment: [([String: String], String)] = [
            (["REPHOTO_CONCURRENCY": "5000"], "rephoto: REPHOTO_CONCURRENCY=5000 must be 1 to 1024"),
            (["REPHOTO_TOKEN_FILE": token], "rephoto: REPHOTO_TOKEN_FILE=\(token): the token must be printable ASCII without spaces"),
            (["REPHOTO_PORT": "x"], "rephoto: REPHOTO_PORT='x' is not a valid value"),
            (["REPHOTO_SESSIONS_PER_CLIENT": "20000"], "rephoto: REPHOTO_SESSIONS_PER_CLIENT=20000 must be 1 to 10000"),
            (["REPHOTO_HOST": "0.0.0.0", "REPHOTO_ALLOW_UNAUTHENTICATED": "yes"], "rephoto: REPHOTO_ALLOW_UNAUTHENTICATED='yes' is not a valid value"),
            (["REPHOTO_HOST": "0.0.0.0", "REPHOTO_ALLOW_UNAUTHENTICATED": "false"],
             "rephoto: refusing to serve 0.0.0.0 without a token: give --token-file, or --allow-unauthenticated on a trusted network"),
        ]
        // An empty folder is the current one to the file system: the store wrote its files there (probe).
        let emptyStore = try CLI.run(["serve", "--port", "0", "--reference-store", ""])
        #expect(emptyStore.status == 2 && emptyStore.stderr.contains("--reference-store '' is empty"), "\(emptyStore.stderr)")
        for (variables, message) in environment {
            let run = try CLI.run(["serve"] + (variables["REPHOTO_PORT"] == nil ? ["--port", "0"] : []), environment: variables)
            #expect(run.status == 2 && run.stderr == message + "\n", "\(variables): \(run.stderr)")
        }
        // REPHOTO_ALLOW_UNAUTHENTICATED=true lets the open bind start, as the flag does: the stdio worker ends at its input's end.
        let open = Process()
        open.executableURL = CLI.executable
        open.arguments = ["serve", "--stdio"]
        open.environment = ProcessInfo.processInfo.environment.merging(["REPHOTO_HOST": "0.0.0.0", "REPHOTO_ALLOW_UNAUTHENTICATED": "true"]) { $1 }
        let input = Pipe(), errors = Pipe()
        open.standardInput = input
        open.standardOutput = FileHandle.nullDevice
        open.standardError = errors
        try open.run()
        try input.fileHandleForWriting.close()
        let openErrors = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        open.waitUntilExit()
        #expect(open.terminationStatus == 0 && !openErrors.contains("refusing"), "\(openErrors)")
        // Every option is in the help, with its variable.
        let help = try CLI.run(["serve", "--help"])
        #expect(help.stdout.contains("--sessions-per-client") && help.stdout.contains("REPHOTO_SESSIONS_PER_CLIENT"), "\(help.stdout)")
        // A flag given beside the variable wins, and its error names the flag.
        let both = try CLI.run(["serve", "--port", "0", "--concurrency", "0"], environment: ["REPHOTO_CONCURRENCY": "5000"])
        #expect(both.status == 2 && both.stderr.contains("--concurrency 0 must be 1 to 1024"), "\(both.stderr)")
    }

    @Test func sigtermLetsRequestsInFlightFinish() async throws {
        let port = 20_000 + Int(getpid() % 20_000)
        let process = Process()
        process.executableURL = CLI.executable
        process.arguments = ["serve", "--port", "\(port)", "--reference-store", try Scratch.directory().path, "--concurrency", "1"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let base = "http://127.0.0.1:\(port)"
        var up = false
        for _ in 0..<100 where !up {
            up = (try? await Self.request("\(base)/healthz"))?.0 == 200
            if !up { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(up)
        let (body, type) = Self.multipart([("reference", try Data(contentsOf: URL(fileURLWithPath: CLI.sample("graf1.png")))),
                                           ("retake", try Data(contentsOf: URL(fileURLWithPath: CLI.sample("graf3.png"))))])
        async let inFlight = Self.request("\(base)/v1/retakes/score", body: body, contentType: type)
        // SIGTERM once the score is being computed (its body read, its reference looked up): after a fixed 150 ms, a
        // loaded machine had not yet connected it, and the stopped listener refused it.
        let waitUntil = Date().addingTimeInterval(10)
        while Date() < waitUntil {
            let text = String(decoding: (try? await Self.request("\(base)/metrics"))?.1 ?? Data(), as: UTF8.self)
            let line = text.split(separator: "\n").first { $0.hasPrefix("rephoto_reference_cache_misses") }
            if let value = line.flatMap({ Double($0.split(separator: " ").last ?? "") }), value >= 1 { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        kill(process.processIdentifier, SIGTERM)
        let (status, data) = try await inFlight
        #expect(status == 200, "\(String(decoding: data, as: UTF8.self))")
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning, Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!process.isRunning)
        #expect(process.terminationStatus == 0)
    }

    /// A client that sends part of a header and then nothing is disconnected after --idle-timeout (probe: 5,000
    /// such connections were held open indefinitely); one announcing a body over the limit is answered 413 at
    /// once, without the body being waited for; one trickling its body, a byte every 0.3 s (never idle for
    /// the timeout), is answered 408 once it falls behind --min-body-rate, and its connection closed.
    @Test func slowAndOversizedClientsAreNotWaitedFor() async throws {
        let port = 20_000 + Int((getpid() + 7) % 20_000)
        let process = try await Self.worker(port: port, ["--idle-timeout", "1", "--min-body-rate", "100"])
        defer { if process.isRunning { process.terminate() } }
        func connection() -> Int32 { Self.connection(port) }
        func exchange(_ socket: Int32, _ text: String) -> String { Self.exchange(socket, text) }
        let huge = connection()
        defer { close(huge) }
        let text = exchange(huge, "POST /v1/retakes/score HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000000\r\n\r\n")
        #expect(text.hasPrefix("HTTP/1.1 413") && text.contains("request body of 100000000 bytes over the limit"), "\(text)")

        let socket = connection()
        defer { close(socket) }
        let partial = "POST /v1/retakes/score HTTP/1.1\r\nHost: x\r\n"
        #expect(send(socket, partial, partial.utf8.count, 0) == partial.utf8.count)
        let start = ContinuousClock.now
        var byte: UInt8 = 0
        let received = recv(socket, &byte, 1, 0)
        // 0: the server closed the connection (a timeout of the 10 s wait would be -1).
        #expect(received == 0, "recv \(received) after \(ContinuousClock.now - start)")

        let trickle = connection()
        defer { close(trickle) }
        let header = "POST /v1/retakes/score HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 5000\r\n\r\n"
        #expect(send(trickle, header, header.utf8.count, 0) == header.utf8.count)
        let began = ContinuousClock.now
        var reply = ""
        var wait = timeval(tv_sec: 0, tv_usec: 300_000)
        setsockopt(trickle, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        // After 1 s plus 1 s per 100 bytes, a few bytes in 1.x s are behind: the answer comes within a few seconds.
        // A byte every 0.3 s at most (the wait for an answer in between), never idle for the 1 s timeout.
        for _ in 0..<40 where reply.isEmpty {
            _ = send(trickle, "x", 1, Int32(MSG_NOSIGNAL))
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(trickle, &buffer, buffer.count, 0)
            if count > 0 { reply = String(decoding: buffer.prefix(count), as: UTF8.self) }
            if count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { break }
        }
        let waited = ContinuousClock.now - began
        #expect(reply.hasPrefix("HTTP/1.1 408") && reply.contains("request body arriving too slowly"), "\(reply)")
        #expect(reply.lowercased().contains("connection: close"), "\(reply)")
        #expect(waited < .seconds(6), "\(waited)")

        // A request answered before its body is read (here 404) ends its connection: Hummingbird would read the
        // rest of the body, a byte a second, as long as the client cared to send it.
        let early = connection()
        defer { close(early) }
        let text404 = exchange(early, "POST /nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
        #expect(text404.hasPrefix("HTTP/1.1 404") && text404.lowercased().contains("connection: close"), "\(text404)")
        var closedAfter404 = false
        for _ in 0..<10 where !closedAfter404 {
            _ = send(early, "x", 1, Int32(MSG_NOSIGNAL))
            var byte: UInt8 = 0
            let count = recv(early, &byte, 1, 0)
            closedAfter404 = count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
        }
        #expect(closedAfter404)

        // A body framed wrongly (a chunk size that is no number) is the client's error: 400, not 500 "internal".
        let framed = connection()
        defer { close(framed) }
        let framingText = exchange(framed, "POST /v1/retakes/score HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
        #expect(framingText.hasPrefix("HTTP/1.1 400") && framingText.contains("the request body could not be read"), "\(framingText)")

        // An upload announcing `Expect: 100-continue` is told to go on before it sends its body (curl waited a
        // second for it on every upload over 1 MB).
        let expecting = connection()
        defer { close(expecting) }
        let interim = exchange(expecting, "POST /v1/retakes/score HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n")
        #expect(interim.hasPrefix("HTTP/1.1 100 Continue"), "\(interim)")

        // Any other expectation cannot be met: 417, named, before the body is waited for (it was ignored).
        let otherwise = connection()
        defer { close(otherwise) }
        let unmet = exchange(otherwise, "POST /v1/retakes/score HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 10\r\nExpect: 200-ok\r\n\r\n")
        #expect(unmet.hasPrefix("HTTP/1.1 417") && unmet.contains("Expect: 200-ok cannot be met"), "\(unmet)")
        // The field is a list: 100-continue twice is still met, and an empty one asks nothing (both were 417).
        for field in ["Expect: 100-continue\r\nExpect: 100-Continue\r\n", "Expect: \r\n"] {
            let listed = connection()
            defer { close(listed) }
            let answer = exchange(listed, "POST /v1/retakes/score HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 4\r\n\(field)\r\n--b-")
            #expect(!answer.hasPrefix("HTTP/1.1 417"), "\(field): \(answer)")
        }

        // A request the HTTP parser refuses never reaches a route: answered 400 by Hummingbird, it is now counted
        // (it was neither logged nor counted).
        // Counted once per such connection, and the body framing error above not at all (its route counted it).
        // A connection for each read: one kept between reads sat idle past the worker's 1 s --idle-timeout on a
        // loaded machine and was closed under it.
        func unparsedCount() -> Int {
            let metrics = connection()
            defer { close(metrics) }
            let text = Self.exchangeWhole(metrics, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            let line = text.split(separator: "\n").first { $0.hasPrefix(#"rephoto_requests_total{route="unparsed",status="400"} "#) }
            return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
        }
        let before = unparsedCount()
        let garbled = connection()
        defer { close(garbled) }
        let unparsed = exchange(garbled, "GET /healthz HTTP/1.1\r\nHost x\r\n\r\n")
        #expect(unparsed.hasPrefix("HTTP/1.1 400"), "\(unparsed)")
        var after = before
        for _ in 0..<20 where after == before {
            try await Task.sleep(for: .milliseconds(50))
            after = unparsedCount()
        }
        #expect(after == before + 1, "\(before) -> \(after)")

        // A request line of 100,000 bytes is refused at once: it was neither answered nor closed, for as long as
        // the client kept the connection.
        let long = connection()
        defer { close(long) }
        let line = "GET /healthz?\(String(repeating: "a", count: 100_000)) HTTP/1.1\r\nHost: x\r\n\r\n"
        _ = send(long, line, line.utf8.count, Int32(MSG_NOSIGNAL))  // the answer may come before all is sent
        var head = [UInt8](repeating: 0, count: 64)
        let got = recv(long, &head, head.count, 0)
        #expect(String(decoding: head.prefix(max(got, 0)), as: UTF8.self).hasPrefix("HTTP/1.1 400"), "recv \(got)")

    }

    /// `rephoto serve` on `port` with `arguments`, once it answers /healthz; with `descriptors`, under that
    /// descriptor limit (ulimit -n), its stderr written to `log`.
    static func worker(port: Int, _ arguments: [String], descriptors: Int? = nil, log: String = "/dev/null") async throws -> Process {
        let process = Process()
        if let descriptors {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -n \(descriptors) && exec \"$0\" serve --port \(port) \(arguments.joined(separator: " ")) 2>\"$1\"",
                                 CLI.executable.path, log]
        } else {
            process.executableURL = CLI.executable
            process.arguments = ["serve", "--port", "\(port)"] + arguments
            process.standardError = FileHandle.nullDevice
        }
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        var up = false
        for _ in 0..<100 where !up {
            up = (try? await Self.request("http://127.0.0.1:\(port)/healthz"))?.0 == 200
            if !up { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(up)
        return process
    }

    /// A TCP connection to the worker on `port`, reads timing out after 10 s.
    static func connection(_ port: Int) -> Int32 { WorkerEdgeTests.connection(port) }

    /// Sends `text` and returns what one read brings back.
    static func exchange(_ socket: Int32, _ text: String) -> String {
        #expect(send(socket, text, text.utf8.count, 0) == text.utf8.count)
        var answer = [UInt8](repeating: 0, count: 4096)
        let got = recv(socket, &answer, answer.count, 0)
        return String(decoding: answer.prefix(max(got, 0)), as: UTF8.self)
    }

    /// `exchange`, reading the whole answer (its head and `Content-Length` bytes of body), however it arrives.
    static func exchangeWhole(_ socket: Int32, _ text: String) -> String {
        #expect(send(socket, text, text.utf8.count, 0) == text.utf8.count)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let answer = String(decoding: bytes, as: UTF8.self)
            if let end = answer.range(of: "\r\n\r\n") {
                let length = answer[..<end.lowerBound].split(separator: "\r\n")
                    .first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") } ?? 0
                if answer.utf8.count - answer[..<end.upperBound].utf8.count >= length { return answer }
            }
            let got = recv(socket, &chunk, chunk.count, 0)
            guard got > 0 else { return answer }
            bytes += chunk.prefix(got)
        }
    }

    /// Bodies are buffered whole, so only --concurrency + --queue-length of them are received at once (30
    /// uploads of 60 MB held 2.2 GB; probe): one more is answered 503 before its body is read, and once a
    /// slot is free an upload is received again.
    @Test func uploadsPastTheQueueAreRefusedBeforeTheirBodies() async throws {
        let port = 20_000 + Int((getpid() + 13) % 20_000)
        let process = try await Self.worker(port: port, ["--concurrency", "1", "--queue-length", "1", "--uploads-per-client", "2"])
        defer { if process.isRunning { process.terminate() } }
        // A second worker on the same port says which address is taken (NIO's bind error named none), exit 2.
        let second = try CLI.run(["serve", "--port", "\(port)"])
        #expect(second.status == 2 && second.stderr.hasSuffix("rephoto: cannot listen on 127.0.0.1:\(port): the address is in use (another worker?)\n"),
                "\(second.stderr)")
        let header = "POST /v1/retakes/score HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n"
        let held = [Self.connection(port), Self.connection(port)]
        for socket in held { #expect(send(socket, header + "--b", header.utf8.count + 3, 0) > 0) }
        try await Task.sleep(for: .milliseconds(300))
        let third = Self.connection(port)
        defer { close(third) }
        let refused = Self.exchange(third, header)
        #expect(refused.hasPrefix("HTTP/1.1 503") && refused.contains("2 uploads in progress already") && refused.lowercased().contains("retry-after: 1"),
                "\(refused)")
        for socket in held { close(socket) }
        try await Task.sleep(for: .milliseconds(300))
        let later = Self.connection(port)
        defer { close(later) }
        let body = "--b--\r\n"
        let answered = Self.exchange(later, "POST /v1/retakes/score HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body)
        #expect(answered.hasPrefix("HTTP/1.1 400"), "\(answered)")

        // CONNECT is refused, and since its answer has no framing the connection ends with it, not after the
        // idle timeout (30 s here; the socket's own receive timeout is 10 s).
        let tunnel = Self.connection(port)
        defer { close(tunnel) }
        let connectStart = ContinuousClock.now
        let tunnelled = Self.exchange(tunnel, "CONNECT /v1/retakes/score HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(tunnelled.hasPrefix("HTTP/1.1 405") && tunnelled.lowercased().contains("connection: close"), "\(tunnelled)")
        var rest = [UInt8](repeating: 0, count: 4096)
        while recv(tunnel, &rest, rest.count, 0) > 0 {}
        #expect(ContinuousClock.now - connectStart < .seconds(5), "\(ContinuousClock.now - connectStart)")
    }

    @Test func stdioAnswersOneLinePerRequest() throws {
        let process = Process()
        process.executableURL = CLI.executable
        process.arguments = ["serve", "--stdio", "--max-body-bytes", "2000000"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let lines = [
            #"{"op": "score", "reference": {"path": "\#(CLI.sample("graf1.png"))"}, "retake": {"path": "\#(CLI.sample("graf3.png"))"}}"#,
            #"{"op": "score", "reference": {"path": "\#(CLI.sample("graf1.png"))"}, "retake": {"base64": "R0lGODlhAQABAAAAACw="}}"#,
            "not json",
            #"{"op": "addReference", "image": {"path": "\#(CLI.sample("graf1.png"))"}}"#,
            "{" + String(repeating: "x", count: 4_100_000),  // over twice --max-body-bytes: skipped unread
            #"{"op": "score", "reference": {"path": "/dev/stdin"}, "retake": {"path": "\#(CLI.sample("graf3.png"))"}, "metadata": {"config": "x"}}"#,
            #"{"op": "score", "reference": {"path": "\#(CLI.sample("graf1.png"))"}, "retake": {"path": "\#(CLI.sample("graf3.png"))"}, "metadata": 7}"#,
            "\r",  // a blank line from a client ending its lines with CRLF: no request, no answer
            // A misspelt key was ignored, so the retake went missing with another message, or a setting silently.
            #"{"op": "score", "reference": {"path": "\#(CLI.sample("graf1.png"))"}, "retake": {"path": "\#(CLI.sample("graf3.png"))"}, "metdata": {}}"#,
            #"{"op": 3}"#,
            #"{"op": "score", "reference": {"path": "\#(CLI.sample("graf1.png"))", "base64": "eA=="}, "retake": {"path": "\#(CLI.sample("graf3.png"))"}}"#,
            // The last of a repeated key won (graf3 added for graf1), and an operation's unread keys were ignored.
            #"{"op": "addReference", "image": {"path": "\#(CLI.sample("graf1.png"))", "path": "\#(CLI.sample("graf3.png"))"}}"#,
            #"{"op": "hasReference", "referenceId": "abc", "reference": {"path": "/nonexistent"}}"#,
            #"{"op": "deleteReference"}"#,
            // An escaped spelling of a key is the same key.
            #"{"op": "addReference", "image": {"path": "\#(CLI.sample("graf1.png"))", "p\u0061th": "\#(CLI.sample("graf3.png"))"}}"#,
        ]
        input.fileHandleForWriting.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        try input.fileHandleForWriting.close()
        let out = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let answers = out.split(separator: "\n").map { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:] }
        #expect(answers.count == 14)
        func message(_ k: Int) -> String { (answers[k]["error"] as? [String: Any])?["message"] as? String ?? "" }
        #expect(answers[10]["status"] as? Int == 400 && message(10) == "key 'path' given twice in one object", "\(message(10))")
        #expect(answers[11]["status"] as? Int == 400 && message(11) == "hasReference does not read 'reference' (it reads referenceId)", "\(message(11))")
        #expect(answers[12]["status"] as? Int == 400 && message(12) == "deleteReference needs referenceId", "\(message(12))")
        #expect(answers[13]["status"] as? Int == 400 && message(13) == "key 'path' given twice in one object", "\(message(13))")
        #expect(answers[7]["status"] as? Int == 400 && message(7) == "unknown key 'metdata' (a request line has op, reference, referenceId, retake, image, metadata)", "\(message(7))")
        #expect(answers[8]["status"] as? Int == 400 && message(8) == "op must be a string", "\(message(8))")
        #expect(answers[9]["status"] as? Int == 400 && message(9).contains("reference must be {"), "\(message(9))")
        #expect(answers[4]["status"] as? Int == 413)
        // /dev/stdin is the worker's own input, not an image; a scalar metadata used to kill the process.
        #expect(answers[5]["status"] as? Int == 400 && ((answers[5]["error"] as? [String: Any])?["message"] as? String)?.contains("not a regular file") == true)
        #expect(answers[6]["status"] as? Int == 400)
        #expect((answers[0]["counts"] as? [String: Any])?["inliersHomography"] as? Int ?? 0 > 100)
        #expect(answers[1]["status"] as? Int == 415 && (answers[1]["error"] as? [String: Any])?["code"] as? String == "unsupported_format")
        #expect(answers[2]["status"] as? Int == 400)
        #expect((answers[3]["id"] as? String)?.count == 64)
        #expect(process.terminationStatus == 0)
    }
}
