import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
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
        try await Task.sleep(for: .milliseconds(150))
        kill(process.processIdentifier, SIGTERM)
        let (status, data) = try await inFlight
        #expect(status == 200, "\(String(decoding: data, as: UTF8.self))")
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning, Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!process.isRunning)
        #expect(process.terminationStatus == 0)
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
        ]
        input.fileHandleForWriting.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        try input.fileHandleForWriting.close()
        let out = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let answers = out.split(separator: "\n").map { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:] }
        #expect(answers.count == 7)
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
