package dev.airlock.agent;

import dev.airlock.core.Printable;
import dev.airlock.core.SandboxAgent.FileInfo;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The requests of one agent connection that wait for the agent, by id, and the routing of every
 * frame the agent sends to the one it answers (docs/agent-protocol.md). The first frame must be
 * HELLO with this host's protocol version; after it, a frame of an unknown type, for an unknown id,
 * of the wrong shape, or that does not fit the state of its request is an
 * {@link AgentProtocolException}, on which {@link AgentClient} closes the connection.
 */
final class FrameRouter {

    private final Map<Integer, PendingRequest> pending = new ConcurrentHashMap<>();
    private final CompletableFuture<Integer> hello = new CompletableFuture<>();

    /** Completed with the agent's protocol version when its HELLO comes. */
    CompletableFuture<Integer> hello() {
        return hello;
    }

    void put(int id, PendingRequest request) {
        pending.put(id, request);
    }

    void remove(int id) {
        pending.remove(id);
    }

    /** Forgets {@code request} if it is still the one waiting under {@code id}. */
    void remove(int id, PendingRequest request) {
        pending.remove(id, request);
    }

    /** Fails HELLO, if it has not come, and everything still waiting with {@code why}; forgets them. */
    void failAll(IOException why) {
        hello.completeExceptionally(why);
        pending.values().forEach(request -> request.fail(why));
        pending.clear();
    }

    /** Hands {@code frame} to the request it answers, checking its shape on the way. */
    void dispatch(Frame frame) throws AgentProtocolException {
        PayloadReader payload = new PayloadReader(frame);
        if (!hello.isDone()) {
            if (frame.type() != Frame.HELLO || payload.remaining() != 4) {
                throw new AgentProtocolException("expected HELLO, got frame type " + frame.type());
            }
            int version = payload.u32();
            if (version != AgentClient.PROTOCOL_VERSION) {
                throw new AgentProtocolException("agent speaks protocol version " + Integer.toUnsignedString(version)
                        + ", this host speaks " + AgentClient.PROTOCOL_VERSION);
            }
            hello.complete(version);
            return;
        }
        int id = payload.u32();
        boolean fits = switch (frame.type()) {
            case Frame.STARTED -> payload.exactly(4) && process(id, frame).onStarted(payload.u32());
            case Frame.FORKED -> {
                payload.exactly(4);
                int pid = payload.u32();
                yield pending.get(id) instanceof PendingSpare spare ? pending.remove(id, spare) && spare.onForked(pid)
                        : process(id, frame).onForked(pid);
            }
            case Frame.NEXT_SPARE -> payload.exactly(4) && process(id, frame).onNextSpare(payload.u32());
            case Frame.STDOUT, Frame.STDERR -> {
                if (payload.remaining() > Frame.MAX_OUTPUT_CHUNK) {
                    throw new AgentProtocolException("output chunk of " + payload.remaining() + " bytes is over "
                            + Frame.MAX_OUTPUT_CHUNK);
                }
                yield process(id, frame).onOutput(frame.type() == Frame.STDOUT, payload.rest());
            }
            case Frame.EXIT -> {
                payload.exactly(8);
                boolean ok = process(id, frame).onExit(payload.u32(), payload.u32());
                pending.remove(id);
                yield ok;
            }
            case Frame.FAILED -> {
                int errno = payload.u32();
                String message = Printable.of(payload.string(), AgentClient.MAX_MESSAGE_CHARS);
                payload.exactly(0);
                yield switch (pending.remove(id)) {
                    case RemoteProcess process -> process.onStartFailed(message);
                    case FileRequest request -> request.onFailed(errno, message);
                    case PortStream stream -> stream.onOpenFailed(errno, message);
                    case PendingSpare spare -> spare.onFailed(errno, message);
                    case null -> throw unknownId(id, frame);
                };
            }
            case Frame.DONE -> {
                payload.exactly(0);
                yield switch (pending.get(id)) {
                    case PortStream stream -> stream.onOpened();   // registered until the stream ends
                    case FileRequest request -> {
                        pending.remove(id);
                        yield request.onDone();
                    }
                    case null, default -> false;
                };
            }
            case Frame.PORT_DATA, Frame.PORT_EOF, Frame.PORT_RESET, Frame.PORT_CREDIT -> {
                int length = payload.remaining();
                boolean shaped = switch (frame.type()) {
                    case Frame.PORT_DATA -> length >= 1 && length <= Frame.PORT_CHUNK;
                    case Frame.PORT_CREDIT -> length == 4;
                    default -> length == 0;
                };
                if (!shaped) {
                    throw new AgentProtocolException("port stream frame type " + frame.type() + " with " + length + " bytes of payload");
                }
                yield switch (pending.get(id)) {
                    case PortStream stream -> switch (frame.type()) {
                        case Frame.PORT_DATA -> stream.onData(payload.rest());
                        case Frame.PORT_EOF -> stream.onEof();
                        case Frame.PORT_RESET -> stream.onReset();
                        default -> stream.onCredit(payload.u32());
                    };
                    case null -> true;           // the stream ended here and a frame crossed that: ignored
                    default -> throw new AgentProtocolException("port stream frame type " + frame.type() + " for request "
                            + Integer.toUnsignedString(id) + ", which is no port stream");
                };
            }
            case Frame.DATA -> {
                if (payload.remaining() < 1 || payload.remaining() > Frame.MAX_DATA_CHUNK) {
                    throw new AgentProtocolException("DATA chunk of " + payload.remaining() + " bytes is outside 1.."
                            + Frame.MAX_DATA_CHUNK);
                }
                yield fileRequest(id, frame).onData(payload.rest());
            }
            case Frame.FILEINFO -> {
                FileInfo info = payload.fileInfo();
                FileRequest request = fileRequest(id, frame);
                if (request instanceof PendingStat) {
                    pending.remove(id);   // STAT is answered by this one frame
                }
                yield request.onFileInfo(info);
            }
            default -> throw new AgentProtocolException("unknown frame type " + frame.type());
        };
        if (!fits) {
            throw new AgentProtocolException("frame type " + frame.type() + " does not fit the state of request " + id);
        }
    }

    private RemoteProcess process(int id, Frame frame) throws AgentProtocolException {
        if (pending.get(id) instanceof RemoteProcess process) {
            return process;
        }
        throw unknownId(id, frame);
    }

    private FileRequest fileRequest(int id, Frame frame) throws AgentProtocolException {
        return switch (pending.get(id)) {
            case FileRequest request -> request;
            case RemoteProcess ignored -> throw new AgentProtocolException("frame type " + frame.type()
                    + " for request " + Integer.toUnsignedString(id) + ", which is a process");
            case PortStream ignored -> throw new AgentProtocolException("frame type " + frame.type()
                    + " for request " + Integer.toUnsignedString(id) + ", which is a port stream");
            case PendingSpare ignored -> throw new AgentProtocolException("frame type " + frame.type()
                    + " for request " + Integer.toUnsignedString(id) + ", which is a spare supervisor");
            case null -> throw unknownId(id, frame);
        };
    }

    private static AgentProtocolException unknownId(int id, Frame frame) {
        return new AgentProtocolException("frame type " + frame.type() + " for unknown id " + Integer.toUnsignedString(id));
    }
}
