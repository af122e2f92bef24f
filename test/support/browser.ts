import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { SUBPROTOCOL_PREFIX } from "../../durable-objects/protocol";
import { call } from "./api";

export type Frame = Record<string, unknown> & {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  type?: string;
};

/**
 * A scripted browser extension on the far end of `/v1/agent-browser/connect`: it records
 * every frame the server sends and lets a test answer them.
 */
export class FakeExtension {
  private readonly frames: string[] = [];
  private waiters: (() => void)[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  constructor(readonly ws: WebSocket) {
    ws.addEventListener("message", (e) => {
      this.frames.push(typeof e.data === "string" ? e.data : new TextDecoder().decode(e.data as ArrayBuffer));
      for (const w of this.waiters.splice(0)) w();
    });
    this.closed = new Promise((resolve) =>
      ws.addEventListener("close", (e) => resolve({ code: e.code, reason: e.reason })),
    );
    ws.accept();
  }

  /** The next frame the server sent (raw text), waiting up to `ms`. */
  async nextRaw(ms = 5_000): Promise<string> {
    const deadline = Date.now() + ms;
    while (this.frames.length === 0) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error("no frame from the server in time");
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return this.frames.shift()!;
  }

  async next(ms?: number): Promise<Frame> {
    return JSON.parse(await this.nextRaw(ms)) as Frame;
  }

  /** Frames received and not yet consumed. */
  get backlog(): number {
    return this.frames.length;
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === "string" || frame instanceof Uint8Array ? frame : JSON.stringify(frame));
  }

  succeed(id: number, result: Record<string, unknown> = {}): void {
    this.send({ type: "success", id, result });
  }

  fail(id: number, error: string, message?: string): void {
    this.send({ type: "error", id, error, ...(message ? { message } : {}) });
  }

  close(code = 1000, reason = "bye"): void {
    this.ws.close(code, reason);
  }
}

export const connectHeaders = (token: string, extra: Record<string, string> = {}) => ({
  Upgrade: "websocket",
  "Sec-WebSocket-Protocol": `${SUBPROTOCOL_PREFIX}${token}`,
  ...extra,
});

/** Connects a fake extension with a PAT; asserts the 101 and the echoed subprotocol. */
export async function connectExtension(token: string): Promise<FakeExtension> {
  const res = await call("GET", "/v1/agent-browser/connect", { headers: connectHeaders(token) });
  expect(res.status).toBe(101);
  expect(res.headers.get("Sec-WebSocket-Protocol")).toBe(`${SUBPROTOCOL_PREFIX}${token}`);
  if (!res.webSocket) throw new Error("no WebSocket on the 101 response");
  return new FakeExtension(res.webSocket);
}

export const sessionOf = (userId: string) => env.BROWSER_SESSION.getByName(userId);

/** Polls until `check` holds (the object's side of a close arrives asynchronously). */
export async function eventually(check: () => Promise<boolean> | boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A 1×1 transparent PNG, base64. */
export const TINY_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
