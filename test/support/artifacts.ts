import { env } from "cloudflare:workers";
import type { TurnScope } from "../../src/platform/turn-tools";
import { call } from "./api";
import type { signupWorkspace } from "./seed";

/**
 * Seeds a conversation with its participants straight into D1 (the conversations area owns
 * the routes that create them; artifacts only read these rows).
 */
export async function seedConversation(
  workspaceId: string,
  createdBy: string,
  participants: string[] = [createdBy],
  title: string | null = "Quarterly numbers",
): Promise<string> {
  const id = crypto.randomUUID();
  const agent = await env.DB.prepare("SELECT id FROM agents WHERE workspace_id = ? ORDER BY id LIMIT 1")
    .bind(workspaceId)
    .first<{ id: string }>();
  const now = new Date().toISOString();
  await env.DB.batch([
    env.DB.prepare(
      "INSERT INTO conversations (id, workspace_id, title, mode, agent_id, created_by, created_at, last_message_at) VALUES (?, ?, ?, 'standard', ?, ?, ?, ?)",
    ).bind(id, workspaceId, title, agent!.id, createdBy, now, now),
    ...participants.map((userId) =>
      env.DB.prepare(
        "INSERT INTO conversation_participants (conversation_id, user_id, workspace_id, last_message_at, added_at) VALUES (?, ?, ?, ?, ?)",
      ).bind(id, userId, workspaceId, now, now),
    ),
  ]);
  return id;
}

export const BOUNDARY = "----artifact-test-boundary-7MA4YWxkTrZu0gW";
const enc = new TextEncoder();

export type FormPart = {
  name: string;
  /** Written raw (UTF-8) into `filename="…"`. */
  filename?: string;
  /** Adds `filename*=UTF-8''…`. */
  filenameStar?: string;
  contentType?: string;
  content: string | Uint8Array;
};

/** A multipart/form-data body, byte for byte, so tests control every part of it. */
export function multipartBody(parts: FormPart[], boundary = BOUNDARY): Uint8Array {
  const chunks: Uint8Array[] = [];
  for (const p of parts) {
    let disposition = `form-data; name="${p.name}"`;
    if (p.filename !== undefined) disposition += `; filename="${p.filename}"`;
    if (p.filenameStar !== undefined) disposition += `; filename*=UTF-8''${encodeURIComponent(p.filenameStar)}`;
    let head = `--${boundary}\r\nContent-Disposition: ${disposition}\r\n`;
    if (p.contentType) head += `Content-Type: ${p.contentType}\r\n`;
    chunks.push(enc.encode(`${head}\r\n`), typeof p.content === "string" ? enc.encode(p.content) : p.content);
    chunks.push(enc.encode("\r\n"));
  }
  chunks.push(enc.encode(`--${boundary}--\r\n`));
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.length;
  }
  return out;
}

export const formType = (boundary = BOUNDARY) => `multipart/form-data; boundary=${boundary}`;

/** Uploads one file into a conversation. */
export function uploadFile(
  token: string,
  conversationId: string,
  file: { name: string; content: string | Uint8Array; contentType?: string },
  extra: FormPart[] = [],
): Promise<Response> {
  return call("POST", `/v1/api/conversations/${conversationId}/artifacts`, {
    token,
    headers: { "Content-Type": formType() },
    rawBody: multipartBody([
      { name: "file", filename: file.name, contentType: file.contentType ?? "text/plain", content: file.content },
      ...extra,
    ]),
  });
}

/** The scope a turn of the workspace's assistant hands its tools, for calling a tool directly. */
export const turnScopeFor = (
  w: Awaited<ReturnType<typeof signupWorkspace>>,
  conversationId: string | null,
  userId = w.user.id,
  e: Env = env,
): TurnScope => ({
  env: e,
  workspaceId: w.workspace.id,
  userId,
  agent: { id: crypto.randomUUID(), slug: "assistant", skills: [], mcpServers: [] },
  conversationId,
  turnId: crypto.randomUUID(),
  origin: "https://svc.test",
  artifactIds: [],
  signal: new AbortController().signal,
});
