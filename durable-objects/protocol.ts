/**
 * The local-browser frame protocol: WebDriver-BiDi-shaped JSON text
 * frames over `GET /v1/agent-browser/connect`. Shared by the BrowserSession object, the
 * Worker routes and the reference bridge in tools/browser-bridge (Node runs this file with
 * its built-in type stripping, so it uses erasable TypeScript only and imports nothing but zod).
 *
 * server → extension command  { id, method, params }
 * extension → server reply    { type: "success", id, result } | { type: "error", id, error, message? }
 * extension → server event    { type: "event", method: "computer.ready", params: { user_agent } }
 * server → extension event    { type: "event", method: "session.error", params: { error, message } }
 *                              (the answer to a frame the server could not accept)
 * liveness                    the text frame `{"type":"ping"}` is answered with `{"type":"pong"}`
 *                              by the platform itself, without waking the object.
 */
import { z } from "zod";

/** Subprotocol that carries the personal access token: `Sec-WebSocket-Protocol: svc-pat.<token>`. */
export const SUBPROTOCOL_PREFIX = "svc-pat.";

export const PING_FRAME = '{"type":"ping"}';
export const PONG_FRAME = '{"type":"pong"}';

/**
 * Bounds that keep one extension from exhausting its object. A frame over the size bound,
 * or a binary frame, is refused with a `session.error` event; a socket that sends more than
 * maxFramesPerWindow frames of its own in one rateWindowMs window is closed with CLOSE.policy.
 * Not counted: pings (the platform answers those) and one reply per command the server sent.
 */
export const LIMITS = {
  /** Largest accepted extension frame, in UTF-16 code units (a base64 PNG screenshot must fit). */
  maxFrameChars: 8 * 1024 * 1024,
  maxFramesPerWindow: 100,
  rateWindowMs: 5_000,
  /** Commands awaiting a reply at once, per user. */
  maxPending: 8,
  defaultTimeoutMs: 30_000,
  minTimeoutMs: 100,
  maxTimeoutMs: 120_000,
  /** Longest text the server accepts from `computer.read` and `computer.url`. */
  maxTextChars: 200_000,
} as const;

/** Close codes the server uses (4000-4999 are application codes). */
export const CLOSE = {
  /** A newer connection of the same user took over. */
  replaced: 4001,
  /** The server ended the session (user erased, token no longer valid). */
  ended: 4003,
  /** Rate bound exceeded (RFC 6455 policy violation). */
  policy: 1008,
} as const;

export const METHODS = [
  "computer.screenshot",
  "computer.navigate",
  "computer.click",
  "computer.type",
  "computer.key",
  "computer.scroll",
  "computer.url",
  "computer.read",
] as const;
export type Method = (typeof METHODS)[number];

const coordinate = z.number().int().min(0).max(100_000);
const delta = z.number().int().min(-100_000).max(100_000);
const empty = z.object({}).strict();

/** Parameters of each command, as the server sends them. */
export const PARAMS = {
  "computer.screenshot": empty,
  "computer.navigate": z.object({ url: z.url({ protocol: /^https?$/ }).max(4096) }).strict(),
  "computer.click": z.object({ x: coordinate, y: coordinate }).strict(),
  "computer.type": z.object({ text: z.string().min(1).max(10_000) }).strict(),
  "computer.key": z.object({ key: z.string().min(1).max(64) }).strict(),
  "computer.scroll": z.object({ x: coordinate, y: coordinate, dx: delta, dy: delta }).strict(),
  "computer.url": empty,
  "computer.read": empty,
} as const satisfies Record<Method, z.ZodType>;
export type Params<M extends Method> = z.infer<(typeof PARAMS)[M]>;

const done = z.object({});
/** The result each command must carry in its success reply; unknown keys are dropped. */
export const RESULTS = {
  "computer.screenshot": z.object({ data: z.base64().min(1) }),
  "computer.navigate": done,
  "computer.click": done,
  "computer.type": done,
  "computer.key": done,
  "computer.scroll": done,
  "computer.url": z.object({ url: z.string().max(LIMITS.maxTextChars), title: z.string().max(LIMITS.maxTextChars) }),
  "computer.read": z.object({ text: z.string().max(LIMITS.maxTextChars) }),
} as const satisfies Record<Method, z.ZodType>;
export type Result<M extends Method> = z.infer<(typeof RESULTS)[M]>;

const frameId = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

export const CommandFrameSchema = z.object({
  id: frameId,
  method: z.enum(METHODS),
  params: z.record(z.string(), z.unknown()),
});
export type CommandFrame = z.infer<typeof CommandFrameSchema>;

export const SuccessFrameSchema = z.object({
  type: z.literal("success"),
  id: frameId,
  result: z.record(z.string(), z.unknown()),
});

export const ErrorFrameSchema = z.object({
  type: z.literal("error"),
  id: frameId,
  error: z.string().min(1).max(200),
  message: z.string().max(2_000).optional(),
});

export const EventFrameSchema = z.object({
  type: z.literal("event"),
  method: z.string().min(1).max(100),
  params: z.record(z.string(), z.unknown()).optional(),
});

/** Every frame an extension may send. */
export const ExtensionFrameSchema = z.discriminatedUnion("type", [
  SuccessFrameSchema,
  ErrorFrameSchema,
  EventFrameSchema,
]);
export type ExtensionFrame = z.infer<typeof ExtensionFrameSchema>;

export const ReadyParamsSchema = z.object({ user_agent: z.string().max(512).optional() });

/** The event the server sends when it cannot accept an extension's frame. */
export type SessionErrorEvent = {
  type: "event";
  method: "session.error";
  params: { error: "invalid frame" | "frame too large" | "binary frame" | "unknown id"; message: string; id?: number };
};

/** What `command()` resolves with: the extension's result, or why there is none. */
export type CommandOutcome =
  | { ok: true; result: Record<string, unknown> }
  | {
      ok: false;
      /** The extension's `error`, or one of the server's own: timeout, disconnected, not connected, busy, invalid argument, invalid result. */
      error: string;
      message: string;
    };

/**
 * A client's (extension's or bridge's) handling of one text frame from the server: a command is
 * checked, run and answered with a success or error frame; an event is logged; anything else is
 * answered with `unknown command` when it names an id. `run` may throw an Error named
 * TimeoutError or NotAllowedError for the matching error code.
 */
export async function answerCommand(
  text: string,
  run: (method: Method, params: Params<Method>) => Promise<Record<string, unknown>>,
  send: (frame: object) => void,
  log: (line: string) => void,
): Promise<void> {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return log("ignored a non-JSON frame");
  }
  if (data && typeof data === "object" && "type" in data && data.type === "event") {
    return log(`server event ${JSON.stringify(data)}`);
  }
  const frame = CommandFrameSchema.safeParse(data);
  if (!frame.success) {
    const id = data && typeof data === "object" && "id" in data && Number.isInteger(data.id) ? data.id : null;
    if (id !== null)
      send({ type: "error", id, error: "unknown command", message: frame.error.message.slice(0, 1_000) });
    return;
  }
  const { id, method, params } = frame.data;
  const checked = PARAMS[method].safeParse(params);
  if (!checked.success)
    return send({ type: "error", id, error: "invalid argument", message: checked.error.message.slice(0, 1_000) });
  try {
    send({ type: "success", id, result: await run(method, checked.data as Params<Method>) });
  } catch (e) {
    const error = e instanceof Error ? clientErrorCode(e) : "unknown error";
    send({ type: "error", id, error, message: String(e instanceof Error ? e.message : e).slice(0, 1_000) });
  }
}

function clientErrorCode(e: Error): string {
  if (e.name === "TimeoutError") return "timeout";
  if (e.name === "NotAllowedError") return "not allowed";
  return "unknown error";
}

/** What the extension and the bridge need of their WebSocket (the DOM's and Node's alike). */
type ClientSocket = {
  readonly readyState: number;
  send(data: string): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  addEventListener(type: "open" | "close", listener: () => void): void;
};

const SOCKET_OPEN = 1;

/**
 * A client's side of one connection: once open, it announces `computer.ready` and pings every
 * 20 s; it answers each command in arrival order (`answerCommand`); the pings stop on close.
 */
export function serveCommands(
  ws: ClientSocket,
  userAgent: string,
  run: Parameters<typeof answerCommand>[1],
  log: (line: string) => void,
): void {
  let pinger: ReturnType<typeof setInterval> | undefined;
  let queue = Promise.resolve();
  const send = (frame: string) => ws.readyState === SOCKET_OPEN && ws.send(frame);
  ws.addEventListener("open", () => {
    send(JSON.stringify({ type: "event", method: "computer.ready", params: { user_agent: userAgent } }));
    pinger = setInterval(() => send(PING_FRAME), 20_000);
  });
  ws.addEventListener("message", (event) => {
    const text = event.data;
    if (typeof text !== "string" || text === PONG_FRAME) return;
    queue = queue.then(() => answerCommand(text, run, (frame) => send(JSON.stringify(frame)), log));
  });
  ws.addEventListener("close", () => clearInterval(pinger));
}

/**
 * What a client does after a close it did not ask for: after 4001 (another client took over) or
 * 4003 (the server ended the session) it stops, since reconnecting would only fight that;
 * otherwise it reconnects after a jittered back-off for its `attempt`-th try (0, 1, ...).
 */
export function afterClose(
  event: { code: number; reason: string },
  attempt: number,
): { reconnectInMs: number | null; line: string } {
  if (event.code === CLOSE.replaced || event.code === CLOSE.ended)
    return { reconnectInMs: null, line: `closed by the server (${event.code} ${event.reason}); not reconnecting` };
  const delay = Math.min(30_000, 500 * 2 ** attempt) * (0.75 + Math.random() / 2);
  return {
    reconnectInMs: delay,
    line: `disconnected (${event.code}${event.reason ? ` ${event.reason}` : ""}); reconnecting in ${Math.round(delay)} ms`,
  };
}
