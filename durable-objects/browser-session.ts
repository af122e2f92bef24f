import { DurableObject } from "cloudflare:workers";
import { z } from "zod";
import { auditAlone } from "../src/audit/events";
import { nowIso } from "../src/platform/env";
import { logError } from "../src/platform/log";
import type { CommandOutcome, Method, SessionErrorEvent } from "./protocol";

/** Header on the Worker's internal upgrade request carrying the verified identity (never a client header). */
export const CONNECTION_META_HEADER = "X-Browser-Session-Meta";

const connectionMetaSchema = () =>
  z.object({
    userId: z.string().min(1),
    workspaceId: z.string().min(1),
    tokenId: z.string().min(1),
    /** Chosen by the Worker so its connect audit event and the object's disconnect event share a target. */
    connectionId: z.string().min(1),
  });
export type ConnectionMeta = z.infer<ReturnType<typeof connectionMetaSchema>>;

/** Per-socket state that must survive hibernation (kept with `serializeAttachment`). */
export type Attachment = ConnectionMeta & {
  connectionId: string;
  connectedAt: string;
  userAgent: string | null;
  /** Next command id on this connection: ids never repeat on a socket, even across hibernation. */
  nextId: number;
  /** Set once the server has retired the socket (replaced or ended), so its close is not audited twice. */
  retired: boolean;
};

/** What `connection()` tells the Worker about the live socket. */
export type ConnectionInfo = Pick<Attachment, "connectionId" | "connectedAt" | "userAgent" | "tokenId">;

type Pending = { connectionId: string; method: Method; settle: (outcome: CommandOutcome) => void };

type Protocol = typeof import("./protocol");

const OPEN = 1;

/**
 * One per user: the link to that user's browser extension. Accepts the socket with the
 * WebSocket Hibernation API, sends `computer.*` commands and matches replies by frame id.
 * Pending commands live in memory; an object with a pending command is busy, so it is not
 * evicted while one waits.
 */
export class BrowserSession extends DurableObject<Env> {
  /**
   * The frame protocol's schemas, loaded before the object takes its first event: the Worker
   * exports this class, so a static import would build them at every isolate's startup.
   */
  private protocol!: Protocol;
  private readonly pending = new Map<number, Pending>();
  /** Frames per socket in the current rate window; losing it on eviction only resets the window. */
  private readonly rate = new Map<string, { windowStart: number; count: number }>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      this.protocol = await import("./protocol");
      ctx.setWebSocketAutoResponse(
        new WebSocketRequestResponsePair(this.protocol.PING_FRAME, this.protocol.PONG_FRAME),
      );
    });
  }

  /** The WebSocket upgrade, handed over by the Worker once it has authenticated the PAT. */
  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket") {
      return new Response("Expected a WebSocket upgrade", { status: 426, headers: { Upgrade: "websocket" } });
    }
    const meta = connectionMetaSchema().safeParse(safeJson(request.headers.get(CONNECTION_META_HEADER) ?? ""));
    if (!meta.success) return new Response("Missing connection metadata", { status: 400 });

    for (const old of this.ctx.getWebSockets()) {
      await this.retire(old, this.protocol.CLOSE.replaced, "replaced by a newer connection", "replaced");
    }

    const { 0: client, 1: server } = new WebSocketPair();
    this.ctx.acceptWebSocket(server);
    const attachment: Attachment = {
      ...meta.data,
      connectedAt: nowIso(),
      userAgent: null,
      nextId: 1,
      retired: false,
    };
    server.serializeAttachment(attachment);
    return new Response(null, { status: 101, webSocket: client });
  }

  isConnected(): boolean {
    return this.live() !== null;
  }

  connection(): ConnectionInfo | null {
    const ws = this.live();
    if (!ws) return null;
    const { connectionId, connectedAt, userAgent, tokenId } = attachmentOf(ws);
    return { connectionId, connectedAt, userAgent, tokenId };
  }

  /**
   * Sends one command and waits for its reply. Never rejects: the outcome says why a
   * command failed (the extension's error, a timeout, a dropped socket, ...).
   */
  command(
    method: Method,
    params: Record<string, unknown> = {},
    timeoutMs: number = this.protocol.LIMITS.defaultTimeoutMs,
  ): Promise<CommandOutcome> {
    const frame = this.protocol.CommandFrameSchema.pick({ method: true, params: true }).safeParse({ method, params });
    if (!frame.success) return Promise.resolve(fail("invalid argument", `unknown method ${String(method)}`));
    const checked = this.protocol.PARAMS[frame.data.method].safeParse(frame.data.params);
    if (!checked.success) return Promise.resolve(fail("invalid argument", z.prettifyError(checked.error)));

    const ws = this.live();
    if (!ws) return Promise.resolve(fail("not connected", "The user's browser is not connected"));
    if (this.pending.size >= this.protocol.LIMITS.maxPending) {
      return Promise.resolve(
        fail("busy", `At most ${this.protocol.LIMITS.maxPending} commands may wait for the browser at once`),
      );
    }

    const attachment = attachmentOf(ws);
    const id = attachment.nextId;
    ws.serializeAttachment({ ...attachment, nextId: id + 1 });
    const wait = clamp(
      Number.isFinite(timeoutMs) ? timeoutMs : this.protocol.LIMITS.defaultTimeoutMs,
      this.protocol.LIMITS.minTimeoutMs,
      this.protocol.LIMITS.maxTimeoutMs,
    );

    return new Promise<CommandOutcome>((resolve) => {
      const timer = setTimeout(
        () => settle(fail("timeout", `The browser did not answer ${method} within ${wait} ms`)),
        wait,
      );
      const settle = (outcome: CommandOutcome) => {
        clearTimeout(timer);
        this.pending.delete(id);
        resolve(outcome);
      };
      this.pending.set(id, { connectionId: attachment.connectionId, method: frame.data.method, settle });
      try {
        ws.send(JSON.stringify({ id, method: frame.data.method, params: checked.data }));
        this.creditReply(attachment.connectionId);
      } catch (e) {
        settle(fail("disconnected", `The browser connection is closed (${String(e)})`));
      }
    });
  }

  /** Ends the user's session (erasure, a revoked token): closes the socket and fails its commands. */
  async disconnect(reason: string): Promise<boolean> {
    let closed = false;
    for (const ws of this.ctx.getWebSockets())
      closed = (await this.retire(ws, this.protocol.CLOSE.ended, reason, "ended")) || closed;
    return closed;
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const attachment = attachmentOf(ws);
    if (attachment.retired) return;
    if (!this.withinRate(ws, attachment.connectionId)) return;

    if (typeof message !== "string") {
      return this.refuse(ws, "binary frame", "Frames are JSON text; binary frames are not accepted");
    }
    if (message.length > this.protocol.LIMITS.maxFrameChars) {
      const id = leadingId(message);
      const detail = `A frame may hold at most ${this.protocol.LIMITS.maxFrameChars} characters`;
      if (id !== null) this.pending.get(id)?.settle(fail("frame too large", detail));
      return this.refuse(ws, "frame too large", detail, id ?? undefined);
    }
    const parsed = this.protocol.ExtensionFrameSchema.safeParse(safeJson(message));
    if (!parsed.success) return this.refuse(ws, "invalid frame", z.prettifyError(parsed.error));
    const frame = parsed.data;

    if (frame.type === "event") {
      if (frame.method === "computer.ready") {
        const ready = this.protocol.ReadyParamsSchema.safeParse(frame.params ?? {});
        if (!ready.success) return this.refuse(ws, "invalid frame", z.prettifyError(ready.error));
        ws.serializeAttachment({ ...attachment, userAgent: ready.data.user_agent ?? null });
      }
      return;
    }

    const pending = this.pending.get(frame.id);
    if (!pending || pending.connectionId !== attachment.connectionId) {
      return this.refuse(
        ws,
        "unknown id",
        `No command with id ${frame.id} is waiting (it may have timed out)`,
        frame.id,
      );
    }
    if (frame.type === "error") {
      pending.settle(fail(frame.error, frame.message ?? frame.error));
      return;
    }
    const result = this.protocol.RESULTS[pending.method].safeParse(frame.result);
    pending.settle(
      result.success
        ? { ok: true, result: result.data as Record<string, unknown> }
        : fail(
            "invalid result",
            `The result of ${pending.method} does not match the protocol: ${z.prettifyError(result.error)}`,
          ),
    );
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    await this.closed(ws, code, reason || "closed by the browser");
  }

  override async webSocketError(ws: WebSocket, error: unknown): Promise<void> {
    await this.closed(ws, 1011, `socket error: ${String(error)}`);
  }

  private async closed(ws: WebSocket, code: number, reason: string): Promise<void> {
    const attachment = attachmentOf(ws);
    this.rate.delete(attachment.connectionId);
    this.failPending(
      attachment.connectionId,
      "disconnected",
      `The browser disconnected (${code}${reason ? `: ${reason}` : ""})`,
    );
    if (attachment.retired) return;
    ws.serializeAttachment({ ...attachment, retired: true });
    await this.auditDisconnect(attachment, "closed", code);
  }

  /** Closes a socket on the server's initiative; false when it was already retired. */
  private async retire(
    ws: WebSocket,
    code: number,
    reason: string,
    cause: "replaced" | "ended" | "rate_limited",
  ): Promise<boolean> {
    const attachment = attachmentOf(ws);
    if (attachment.retired) return false;
    ws.serializeAttachment({ ...attachment, retired: true });
    this.failPending(attachment.connectionId, "disconnected", `The browser connection was closed: ${reason}`);
    try {
      ws.close(code, reason);
    } catch {
      // already closing
    }
    await this.auditDisconnect(attachment, cause, code);
    return true;
  }

  private live(): WebSocket | null {
    let newest: { ws: WebSocket; at: string } | null = null;
    for (const ws of this.ctx.getWebSockets()) {
      if (ws.readyState !== OPEN) continue;
      const a = attachmentOf(ws);
      if (a.retired) continue;
      if (!newest || a.connectedAt > newest.at) newest = { ws, at: a.connectedAt };
    }
    return newest?.ws ?? null;
  }

  private failPending(connectionId: string, error: string, message: string): void {
    for (const p of [...this.pending.values()]) if (p.connectionId === connectionId) p.settle(fail(error, message));
  }

  private withinRate(ws: WebSocket, connectionId: string): boolean {
    const now = Date.now();
    let r = this.rate.get(connectionId);
    if (!r || now - r.windowStart >= this.protocol.LIMITS.rateWindowMs) {
      r = { windowStart: now, count: 0 };
      this.rate.set(connectionId, r);
    }
    r.count += 1;
    if (r.count <= this.protocol.LIMITS.maxFramesPerWindow) return true;
    void this.retire(ws, this.protocol.CLOSE.policy, "rate limit exceeded", "rate_limited");
    return false;
  }

  /** The reply to a command the server sent is not the extension's own traffic: it does not count against the rate bound. */
  private creditReply(connectionId: string): void {
    const r = this.rate.get(connectionId);
    if (r) r.count -= 1;
    else this.rate.set(connectionId, { windowStart: Date.now(), count: -1 });
  }

  private refuse(ws: WebSocket, error: SessionErrorEvent["params"]["error"], message: string, id?: number): void {
    const event: SessionErrorEvent = {
      type: "event",
      method: "session.error",
      params: { error, message: message.slice(0, 2_000), ...(id !== undefined ? { id } : {}) },
    };
    try {
      ws.send(JSON.stringify(event));
    } catch {
      // the socket closed meanwhile; nothing to answer
    }
  }

  private async auditDisconnect(
    a: Attachment,
    cause: "closed" | "replaced" | "ended" | "rate_limited",
    code: number,
  ): Promise<void> {
    try {
      await auditAlone(this.env, {
        workspaceId: a.workspaceId,
        kind: "browser.disconnect",
        actor: { kind: "token", id: a.userId },
        target: `browser_session:${a.connectionId}`,
        subjectUserId: a.userId,
        details: {
          cause,
          code,
          token_id: a.tokenId,
          connected_at: a.connectedAt,
          duration_ms: Date.now() - Date.parse(a.connectedAt),
        },
      });
    } catch (e) {
      // Neither the chain nor the outbox took it; the socket is closed, so there is no one to tell.
      logError("browser.disconnect event lost", e);
    }
  }
}

function attachmentOf(ws: WebSocket): Attachment {
  return ws.deserializeAttachment() as Attachment;
}

const fail = (error: string, message: string): CommandOutcome => ({ ok: false, error, message });

const clamp = (n: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, Math.round(n)));

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The id of an oversized reply, read from its first bytes only (replies put `type` and `id` first). */
function leadingId(message: string): number | null {
  const m = /^\s*\{\s*(?:"type"\s*:\s*"(?:success|error)"\s*,\s*)?"id"\s*:\s*(\d{1,15})\b/.exec(message.slice(0, 128));
  return m?.[1] ? Number(m[1]) : null;
}
