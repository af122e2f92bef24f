/**
 * The local-browser channel, exactly as the reference bridge (tools/browser-bridge) speaks it:
 * dial /v1/agent-browser/connect with the token as the `svc-pat.<token>` subprotocol, announce
 * `computer.ready`, answer each command in the order received, ping every 20 s, and reconnect
 * with back-off except after 4001 (replaced) or 4003 (ended by the server).
 */
import {
  afterClose,
  type Method,
  type Params,
  SUBPROTOCOL_PREFIX,
  serveCommands,
} from "../../durable-objects/protocol";
import type { ConnectionState } from "./storage";

/** Within the server's default per-command deadline (30 s), so a slow command still gets its answer there. */
const COMMAND_TIMEOUT_MS = 28_000;
/**
 * Calling an extension API resets an MV3 service worker's idle timer; while waiting to reconnect
 * there is no socket traffic to keep the worker (and so the back-off timer) alive.
 */
const KEEPALIVE_MS = 20_000;

export type ConnectionOptions = {
  serviceUrl: string;
  token: string;
  run: (method: Method, params: Params<Method>) => Promise<Record<string, unknown>>;
  onState: (state: ConnectionState) => void;
  /** Never given the token. */
  log: (line: string) => void;
};

export type Connection = { stop: () => void };

export function openConnection(options: ConnectionOptions): Connection {
  const { log } = options;
  const endpoint = new URL("/v1/agent-browser/connect", options.serviceUrl);
  endpoint.protocol = endpoint.protocol === "https:" ? "wss:" : "ws:";

  let stopped = false;
  let socket: WebSocket | null = null;
  let attempt = 0;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let keepalive: ReturnType<typeof setInterval> | undefined;

  const connect = () => {
    if (stopped) return;
    clearInterval(keepalive);
    options.onState({ status: "connecting" });
    let ws: WebSocket;
    try {
      ws = new WebSocket(endpoint, [`${SUBPROTOCOL_PREFIX}${options.token}`]);
    } catch {
      // The browser's message would quote the subprotocol, and so the token.
      stopped = true;
      options.onState({ status: "disconnected", reason: "the token is not a valid personal access token" });
      return;
    }
    socket = ws;
    ws.addEventListener("open", () => {
      attempt = 0;
      log(`connected to ${endpoint.origin}`);
      options.onState({ status: "connected" });
    });
    serveCommands(
      ws,
      navigator.userAgent,
      (method, params) => withTimeout(options.run(method, params), COMMAND_TIMEOUT_MS, method),
      log,
    );
    ws.addEventListener("close", (event) => {
      if (socket === ws) socket = null;
      if (stopped) return;
      const { reconnectInMs, line } = afterClose(event, attempt++);
      log(line);
      if (reconnectInMs === null) {
        stopped = true;
        options.onState({ status: "disconnected", reason: event.reason || `closed by the server (${event.code})` });
        return;
      }
      options.onState({ status: "connecting", reason: event.reason || undefined });
      retry = setTimeout(connect, reconnectInMs);
      keepalive = setInterval(() => void chrome.runtime.getPlatformInfo(), KEEPALIVE_MS);
    });
    ws.addEventListener("error", () => {
      // A refused handshake (403, 426) surfaces as an error followed by close 1006; back-off handles it.
    });
  };

  connect();
  return {
    stop() {
      stopped = true;
      clearTimeout(retry);
      clearInterval(keepalive);
      socket?.close(1000, "extension stopped");
      socket = null;
    },
  };
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`${what} did not finish in ${ms} ms`);
      error.name = "TimeoutError";
      reject(error);
    }, ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
