import RephotoTestSupport
import Foundation
import Testing

/// Issue 62: deploy/container/Containerfile built with buildah (scripts/container build --prebuilt, this build's
/// binary and plugin in the runtime image) and run as two containers sharing one reference store, as behind a
/// load balancer. Skipped, saying why, where buildah or mmdebstrap cannot run (scripts/container exits 77).
@Suite(.serialized) struct ContainerTests {
    static let image = "localhost/rephoto:test"
    static let ports = (45_000 + Int(getpid() % 2_000) * 2, 45_001 + Int(getpid() % 2_000) * 2)  // apart from the others' ranges
    static let token = "container-test-token-\(getpid())-0123456789"
    static let curl = URL(fileURLWithPath: "/usr/bin/curl")

    static func request(_ arguments: [String], port: Int, authorized: Bool = true) throws -> (status: String, body: String) {
        let folder = try Scratch.directory().path
        let auth = authorized ? ["-H", "Authorization: Bearer \(token)"] : []
        let run = try CLI.run(["-s", "-o", folder + "/body", "-w", "%{http_code}"] + auth + arguments.dropLast() + ["http://127.0.0.1:\(port)\(arguments.last!)"],
                              executable: curl)
        return (run.stdout, (try? String(contentsOfFile: folder + "/body", encoding: .utf8)) ?? "")
    }

    /// A JSON document without its timings (milliseconds differ from run to run).
    static func timeless(_ text: String) throws -> NSDictionary {
        var object = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        object["timings"] = nil
        return object as NSDictionary
    }

    @Test(.enabled(if: ["/usr/bin/curl", "/usr/bin/ffmpeg"].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) },
                   "needs curl (the image's health check, the requests) and ffmpeg (a BMP retake): scripts/setup"))
    func imageBuildsServesAndSharesItsStore() throws {
        let bin = CLI.executable.deletingLastPathComponent().path
        let build = try SlurmTests.shell(["scripts/container", "build", "--prebuilt", bin, "--tag", Self.image], [:], seconds: 1_800)
        if build.status == 77 {
            let reason = build.stderr.split(separator: "\n").last { $0.hasPrefix("container:") } ?? "exit status 77"
            try Test.cancel("\(reason); the container test is skipped")
        }
        try #require(build.status == 0, "\(build.stderr.suffix(3_000))")
        #expect(build.stdout == Self.image + "\n")

        // Two containers, one store folder as their volume, one token.
        let scratch = try Scratch.directory().path
        let store = scratch + "/store", tokenFile = scratch + "/token"
        try Self.token.write(toFile: tokenFile, atomically: true, encoding: .utf8)
        var started: [String] = []
        defer { for name in started { _ = try? SlurmTests.shell(["scripts/container", "stop", name], [:], seconds: 180) } }
        for (name, port) in [("test-a", Self.ports.0), ("test-b", Self.ports.1)] {
            started.append(name)
            let start = try SlurmTests.shell(["scripts/container", "start", name, Self.image, "--port", "\(port)", "--store", store,
                                              "--token-file", tokenFile], [:], seconds: 300)
            try #require(start.status == 0, "\(start.stderr)")
            #expect(start.stderr.contains("HEALTHCHECK passed"), "\(start.stderr)")
        }

        let health = try Self.request(["/healthz"], port: Self.ports.0, authorized: false)
        #expect(health.status == "200" && health.body.contains("alive"), "\(health)")
        #expect(try Self.request(["/readyz"], port: Self.ports.1, authorized: false).status == "200")

        // A reference stored through A is known to B: its id is the SHA-256 of the bytes.
        let datasets = CLI.packageRoot.appendingPathComponent("datasets/synth-approach").path
        let reference = datasets + "/reference.jpg", retake = datasets + "/frame-0003.jpg"
        let sum = try CLI.run([reference], executable: URL(fileURLWithPath: "/usr/bin/sha256sum"))
        let digest = try #require(sum.stdout.split(separator: " ").first.map(String.init))
        let stored = try Self.request(["-F", "image=@\(reference)", "/v1/references"], port: Self.ports.0)
        #expect(stored.status == "201" && stored.body.contains("\"id\":\"\(digest)\""), "\(stored)")
        #expect(FileManager.default.fileExists(atPath: "\(store)/\(digest.prefix(2))/\(digest).image"))

        // B scores against it: 200, and the same document as `rephoto pose --json` on the same pair here.
        let score = try Self.request(["-F", "referenceId=\(digest)", "-F", "retake=@\(retake)", "/v1/retakes/score"], port: Self.ports.1)
        #expect(score.status == "200", "\(score)")
        let local = try CLI.run(["pose", "--json", "--reference", reference, "--current", retake])
        #expect(local.status == 0, "\(local.stderr)")
        let answered = try Self.timeless(score.body)
        #expect(answered == (try Self.timeless(local.stdout)))
        let metrics = try #require(answered["metrics"] as? [String: Any])
        #expect((metrics["score"] as? Double).map { $0 > 0 && $0 <= 100 } == true, "\(metrics)")

        // The media plugin in the image (libRephotoMedia.so, OpenCV's imgcodecs): a BMP retake scores as here.
        let bmp = scratch + "/frame-0003.bmp"
        let converted = try CLI.run(["-v", "error", "-i", retake, bmp], executable: URL(fileURLWithPath: "/usr/bin/ffmpeg"))
        #expect(converted.status == 0, "\(converted.stderr)")
        let bmpScore = try Self.request(["-F", "referenceId=\(digest)", "-F", "retake=@\(bmp)", "/v1/retakes/score"], port: Self.ports.0)
        #expect(bmpScore.status == "200", "\(bmpScore)")
        let bmpLocal = try CLI.run(["pose", "--json", "--reference", reference, "--current", bmp])
        #expect(try Self.timeless(bmpScore.body) == (try Self.timeless(bmpLocal.stdout)))

        // The image's token file is in force: without the token, 401; /metrics stays open to Prometheus.
        #expect(try Self.request(["-F", "referenceId=\(digest)", "-F", "retake=@\(retake)", "/v1/retakes/score"], port: Self.ports.1,
                                 authorized: false).status == "401")
        let scraped = try Self.request(["/metrics"], port: Self.ports.1, authorized: false)
        #expect(scraped.status == "200" && scraped.body.contains("rephoto_requests_total{route=\"/v1/retakes/score\",status=\"200\"} 1"), "\(scraped.body.prefix(2_000))")

        // SIGTERM drains and the worker exits 0 (scripts/container stop says so, and exits 0 only then).
        for name in started {
            let stop = try SlurmTests.shell(["scripts/container", "stop", name], [:], seconds: 180)
            #expect(stop.status == 0 && stop.stderr.contains("exited with status 0"), "\(stop.stderr)")
        }
        started = []
    }
}
