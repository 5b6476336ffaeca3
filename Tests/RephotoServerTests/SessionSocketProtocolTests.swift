import Foundation
import Testing
@testable import RephotoServer

/// Each transition of the live session socket's protocol (SessionSocketProtocol), with the inputs a plain string: the
/// opening's metadata as text, refused when it says "refuse".
struct SessionSocketProtocolTests {
    struct Refused: Error {}
    static let id = String(repeating: "ab", count: 32)

    static func fresh() -> SessionSocketProtocol<String> {
        SessionSocketProtocol { data in
            let text = data.map { String(decoding: $0, as: UTF8.self) } ?? "none"
            if text.contains("refuse") { throw Refused() }
            return text
        }
    }

    static func isState(_ session: SessionSocketProtocol<String>, _ name: String) -> Bool {
        switch session.state {
        case .opening: name == "opening"
        case .awaitingReference: name == "awaitingReference"
        case .openingSession: name == "openingSession"
        case .open: name == "open"
        case .closing: name == "closing"
        }
    }

    /// An open session, as after a stored reference's opening.
    static func open() -> SessionSocketProtocol<String> {
        var session = fresh()
        _ = session.text(#"{"referenceId": "\#(id)"}"#)
        session.opened("s1")
        return session
    }

    @Test func aStoredReferencesOpeningOpensTheSession() {
        var session = Self.fresh()
        guard case .open(let inputs, let referenceId, let image) = session.text(#"{"referenceId": "\#(Self.id)", "metadata": {"retake": {}}}"#) else {
            Issue.record("the opening did not open"); return
        }
        #expect(inputs == #"{"retake":{}}"# && referenceId == Self.id && image == nil)
        #expect(Self.isState(session, "openingSession") && session.sessionId == nil)
        session.opened("s1")
        #expect(Self.isState(session, "open") && session.sessionId == "s1")
    }

    @Test func anUploadOpeningWaitsForThePhotoThenOpens() {
        var session = Self.fresh()
        guard case .none = session.text(#"{"reference": "upload"}"#) else { Issue.record("the upload opening did something"); return }
        #expect(Self.isState(session, "awaitingReference"))
        let photo = Data([0xFF, 0xD8, 0xFF])
        guard case .open(let inputs, let referenceId, let image) = session.binary(photo) else { Issue.record("the photo did not open"); return }
        #expect(inputs == "none" && referenceId == nil && image == photo)
        #expect(Self.isState(session, "openingSession"))
    }

    @Test func aBadOpeningClosesTheSocket() {
        for text in ["not json", #"{"referenceId": "short"}"#, #"{"reference": "upload", "referenceId": "\#(Self.id)"}"#,
                     #"{"referenceId": "\#(Self.id)", "extra": 1}"#] {
            var session = Self.fresh()
            guard case .close(.badOpening(let error)) = session.text(text) else { Issue.record("\(text) was not refused"); continue }
            #expect((error as? ServerError)?.envelope.error.code == "bad_input", "\(text)")
            #expect(Self.isState(session, "closing"), "\(text)")
        }
        // Metadata the inputs refuse: their own error is the answer.
        var session = Self.fresh()
        guard case .close(.badOpening(let error)) = session.text(#"{"referenceId": "\#(Self.id)", "metadata": {"refuse": 1}}"#) else {
            Issue.record("refused metadata opened"); return
        }
        #expect(error is Refused && Self.isState(session, "closing"))
    }

    @Test func aFrameBeforeTheOpeningClosesTheSocket() {
        var session = Self.fresh()
        guard case .close(.frameBeforeOpening) = session.binary(Data([1, 2, 3])) else { Issue.record("a frame before the opening was taken"); return }
        #expect(Self.isState(session, "closing"))
    }

    @Test func textWhereThePhotoWasAnnouncedClosesTheSocket() {
        var session = Self.fresh()
        _ = session.text(#"{"reference": "upload"}"#)
        guard case .close(.textInsteadOfReference) = session.text(#"{"timestamp": 1}"#) else { Issue.record("text was taken for the photo"); return }
        #expect(Self.isState(session, "closing"))
    }

    @Test func anOpenSessionComputesFramesWithTheirMetadata() {
        var session = Self.open()
        guard case .compute(let plain, let bytes) = session.binary(Data([7])) else { Issue.record("a frame was not computed"); return }
        #expect(plain.timestamp == nil && bytes == Data([7]))
        guard case .none = session.text(#"{"timestamp": 2.5}"#) else { Issue.record("metadata was not kept"); return }
        guard case .compute(let metadata, _) = session.binary(Data([8])) else { Issue.record("the frame after metadata was not computed"); return }
        #expect(metadata.timestamp == 2.5)
        // Metadata goes with one frame only.
        guard case .compute(let after, _) = session.binary(Data([9])) else { Issue.record("a frame was not computed"); return }
        #expect(after.timestamp == nil && session.sessionId == "s1")
    }

    @Test func refusedFrameMetadataDropsItsFrameAndTheSessionGoesOn() {
        var session = Self.open()
        guard case .answer(.badFrameMetadata(let error)) = session.text(#"{"timestamp": "soon"}"#) else {
            Issue.record("bad metadata was not refused"); return
        }
        #expect(error.envelope.error.code == "bad_input")
        guard case .none = session.binary(Data([1])) else { Issue.record("the frame after refused metadata was computed"); return }
        guard case .compute = session.binary(Data([2])) else { Issue.record("the session did not go on"); return }
        #expect(Self.isState(session, "open"))
    }

    @Test func anOpeningOnAnOpenSessionIsAnsweredAndTheSessionGoesOn() {
        var session = Self.open()
        guard case .answer(.alreadyOpen) = session.text(#"{"referenceId": "\#(Self.id)"}"#) else { Issue.record("a second opening was taken"); return }
        #expect(Self.isState(session, "open") && session.sessionId == "s1")
    }

    @Test func whileOpeningAndClosingNothingIsTaken() {
        var session = Self.fresh()
        _ = session.text(#"{"referenceId": "\#(Self.id)"}"#)
        guard case .none = session.binary(Data([1])), case .none = session.text("{}") else { Issue.record("a message was taken while opening"); return }
        session.failedToOpen()
        #expect(Self.isState(session, "closing"))
        session.opened("late")
        #expect(Self.isState(session, "closing") && session.sessionId == nil)
        guard case .none = session.binary(Data([1])), case .none = session.text(#"{"referenceId": "\#(Self.id)"}"#) else {
            Issue.record("a message was taken while closing"); return
        }
        var open = Self.open()
        open.closed()
        #expect(Self.isState(open, "closing") && open.sessionId == nil)
    }
}
