import Foundation

/// The live session socket's protocol (docs/server.md, "Over a WebSocket") as named states, and what each whole
/// message does in each. It only decides: `LiveSessionSocket` does what a step says (opens the session, computes a
/// frame, answers an error, closes). `Inputs` is what an opening's metadata is read into (the service's inputs).
struct SessionSocketProtocol<Inputs> {
    enum State {
        /// Nothing read yet: the first message must be the opening, a text message.
        case opening
        /// `{"reference": "upload"}` was read: the reference photo comes next, as one binary message.
        case awaitingReference(Inputs)
        /// The session is being opened from the opening (its reference prepared); `opened` or `failedToOpen` follows.
        case openingSession
        /// Frames flow, each optionally after a text message with its metadata; `next` is what the next frame carries.
        case open(id: String, next: NextFrame)
        /// The socket is closing: nothing more is read.
        case closing
    }

    /// What the next frame of an open session carries.
    enum NextFrame {
        case plain
        case metadata(FrameMetadata)
        /// Its metadata was refused, so the frame is not computed (computed without its timestamp and attitude, it
        /// would skip their checks).
        case dropped
    }

    /// What to do with a message.
    enum Step {
        /// Open the session on a stored reference (`referenceId`) or an uploaded one (`image`), then call `opened`
        /// (or `failedToOpen`).
        case open(Inputs, referenceId: String?, image: Data?)
        /// Compute this frame of the open session.
        case compute(FrameMetadata, Data)
        /// Nothing to do: metadata kept, or a frame dropped as its refused metadata said.
        case none
        /// Answer the refusal; the session goes on.
        case answer(Refusal)
        /// Answer the refusal, then close the socket (1008): the session could not be opened.
        case close(Refusal)
    }

    /// Why a message was refused, typed; `error` is its answer.
    enum Refusal {
        /// The opening could not be read, or its metadata could not be used.
        case badOpening(any Error)
        /// A frame came before the opening.
        case frameBeforeOpening
        /// A text message came where the reference photo was announced.
        case textInsteadOfReference
        /// An opening came on an open session.
        case alreadyOpen
        /// A frame's metadata could not be read: the frame sent next is not computed.
        case badFrameMetadata(ServiceError)

        var error: any Error {
            switch self {
            case .badOpening(let error): error
            case .frameBeforeOpening:
                ServerError.badRequest("open the session first: a text message {\"referenceId\": ...} or {\"reference\": \"upload\"} before any frame")
            case .textInsteadOfReference:
                ServerError.badRequest("expected the reference photo as a binary message after {\"reference\": \"upload\"}")
            case .alreadyOpen:
                ServerError.badRequest("the session is already open: send frames (binary), each optionally after its metadata {\"attitude\", \"timestamp\"}")
            case .badFrameMetadata(let error):
                ServiceError(error.cause, code: error.envelope.error.code, kind: error.envelope.error.kind, "\(error.message) (the frame sent next is not computed)")
            }
        }
    }

    private(set) var state = State.opening
    /// Reads an opening's metadata (nil: none given) into the inputs of a session.
    let readInputs: (Data?) throws -> Inputs

    init(readInputs: @escaping (Data?) throws -> Inputs) { self.readInputs = readInputs }

    /// The session's id, once open.
    var sessionId: String? {
        if case .open(let id, _) = state { return id }
        return nil
    }

    mutating func text(_ text: String) -> Step {
        switch state {
        case .opening:
            do {
                let opening = try Opening.parse(Data(text.utf8))
                let inputs = try readInputs(opening.metadata)
                if opening.upload {
                    state = .awaitingReference(inputs)
                    return .none
                }
                state = .openingSession
                return .open(inputs, referenceId: opening.referenceId, image: nil)
            } catch {
                return close(.badOpening(error))
            }
        case .awaitingReference:
            return close(.textInsteadOfReference)
        case .open(let id, _):
            if Opening.looksLikeOne(text) { return .answer(.alreadyOpen) }
            do {
                state = .open(id: id, next: .metadata(try FrameMetadata.parse(Data(text.utf8))))
                return .none
            } catch let error as ServiceError {
                state = .open(id: id, next: .dropped)
                return .answer(.badFrameMetadata(error))
            } catch {
                state = .open(id: id, next: .dropped)
                return .answer(.badFrameMetadata(ServiceError.badInput("metadata could not be read (\(error))")))
            }
        case .openingSession, .closing:
            return .none
        }
    }

    mutating func binary(_ bytes: Data) -> Step {
        switch state {
        case .opening:
            return close(.frameBeforeOpening)
        case .awaitingReference(let inputs):
            state = .openingSession
            return .open(inputs, referenceId: nil, image: bytes)
        case .open(let id, let next):
            state = .open(id: id, next: .plain)
            switch next {
            case .plain: return .compute(FrameMetadata(), bytes)
            case .metadata(let metadata): return .compute(metadata, bytes)
            case .dropped: return .none
            }
        case .openingSession, .closing:
            return .none
        }
    }

    /// The session `id` opened.
    mutating func opened(_ id: String) {
        guard case .openingSession = state else { return }
        state = .open(id: id, next: .plain)
    }

    /// The session could not be opened: the socket closes.
    mutating func failedToOpen() { state = .closing }

    /// The socket closes (the client left, the idle timeout, shutdown, a refused message).
    mutating func closed() { state = .closing }

    private mutating func close(_ refusal: Refusal) -> Step {
        state = .closing
        return .close(refusal)
    }
}

/// The first message: a stored reference's id, or word that the reference follows as a binary message.
struct Opening: Sendable {
    /// A text naming a reference, as only an opening does.
    static func looksLikeOne(_ text: String) -> Bool {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return false }
        return object["referenceId"] != nil || object["reference"] != nil
    }

    var referenceId: String?
    var upload: Bool
    var metadata: Data?

    static func parse(_ data: Data) throws -> Opening {
        guard data.count <= 64 << 10, let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ServerError.badRequest("the opening message must be a JSON object of at most 64 KiB: {\"referenceId\": ...} or {\"reference\": \"upload\"}")
        }
        if let unknown = object.keys.sorted().first(where: { !["referenceId", "reference", "metadata"].contains($0) }) {
            throw ServerError.badRequest("opening: unknown key '\(unknown.prefix(80))' (it has referenceId, reference, metadata)")
        }
        let id = object["referenceId"] as? String
        let upload = object["reference"] as? String == "upload"
        guard (id != nil) != upload else { throw ServerError.badRequest("opening: give referenceId or \"reference\": \"upload\", one of them") }
        if object["reference"] != nil && !upload { throw ServerError.badRequest("opening: reference must be \"upload\" (the photo follows as a binary message)") }
        var metadata: Data?
        if let value = object["metadata"] {
            guard let tree = value as? [String: Any], JSONSerialization.isValidJSONObject(tree) else { throw ServerError.badRequest("opening: metadata must be an object") }
            metadata = try JSONSerialization.data(withJSONObject: tree)
        }
        if let id, !ReferenceStore.isValid(id) {
            throw ServerError.badRequest("referenceId '\(id.prefix(80))' is not a reference id (64 lowercase hex digits, the SHA-256 of the image)")
        }
        return Opening(referenceId: id, upload: upload, metadata: metadata)
    }
}
