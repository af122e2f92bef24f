import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { ErasureSummarySchema } from "../src/admin/erase-schemas";
import { contentDisposition, parseRange } from "../src/artifacts/download";
import { formDataBoundary, MultipartError, MultipartReader } from "../src/artifacts/multipart";
import { ArtifactDeletedSchema, ArtifactListSchema, ArtifactSchema } from "../src/artifacts/schemas";
import { detachConversationArtifacts, eraseArtifacts, visibleArtifactIds } from "../src/artifacts/service";
import { artifactKey, createArtifact } from "../src/artifacts/store";
import { artifactTools, DELIVER_MAX_BYTES } from "../src/artifacts/tools";
import { db } from "../src/platform/db";
import type { TurnScope } from "../src/platform/turn-tools";
import { sha256Hex } from "./support/agents";
import { call, expectProblem, parse } from "./support/api";
import { BOUNDARY, formType, multipartBody, seedConversation, turnScopeFor, uploadFile } from "./support/artifacts";
import { auditEvents } from "./support/audit";
import { addUser, signupWorkspace } from "./support/seed";

const MiB = 1024 * 1024;
const enc = new TextEncoder();
type Ws = Awaited<ReturnType<typeof signupWorkspace>>;
type User = Awaited<ReturnType<typeof addUser>>;

async function uploaded(res: Response) {
  const text = await res.text();
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${text}`);
  return ArtifactSchema.parse(JSON.parse(text));
}

const download = (token: string, id: string, headers: Record<string, string> = {}) =>
  call("GET", `/v1/api/artifacts/${id}/download`, { token, headers });

async function rowOf(id: string) {
  return env.DB.prepare("SELECT * FROM artifacts WHERE id = ?").bind(id).first<Record<string, unknown>>();
}

/** A request body that yields `head`, then `fileBytes` zero bytes in 64 KiB chunks, then `tail`; counts what was read. */
function streamedForm(head: string, fileBytes: number, tail: string) {
  const zeros = new Uint8Array(64 * 1024);
  const counter = { pulled: 0, cancelled: false };
  let sent = -1;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent < 0) {
        sent = 0;
        return controller.enqueue(enc.encode(head));
      }
      if (sent < fileBytes) {
        const n = Math.min(zeros.length, fileBytes - sent);
        sent += n;
        counter.pulled += n;
        return controller.enqueue(n === zeros.length ? zeros : zeros.subarray(0, n));
      }
      controller.enqueue(enc.encode(tail));
      controller.close();
    },
    cancel() {
      counter.cancelled = true;
    },
  });
  return { body, counter };
}

const fileHead = (name = "big.bin") =>
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`;
const closing = `\r\n--${BOUNDARY}--\r\n`;

let ws: Ws;
let other: Ws;
let member: User;
let readOnly: User;
let conv: string;

beforeAll(async () => {
  [ws, other] = await Promise.all([signupWorkspace(), signupWorkspace()]);
  [member, readOnly] = await Promise.all([
    addUser(ws.adminToken, "member", ["conversations:read", "conversations:write"]),
    addUser(ws.adminToken, "member", ["agents:read"]),
  ]);
  conv = await seedConversation(ws.workspace.id, ws.user.id);
});

describe("POST /v1/api/conversations/{id}/artifacts", () => {
  it("stores the file under a key of ids only, answers 201 with the entry, and records artifact.create", async () => {
    const content = "name,total\nnorth,12\nsouth,30\n";
    const res = await uploadFile(
      ws.adminToken,
      conv,
      { name: "../../etc/report\u0007.csv", content, contentType: "text/csv; charset=utf-8" },
      [
        { name: "caption", content: "  Q3 totals  " },
        { name: "sensitive", content: "true" },
      ],
    );
    const artifact = await uploaded(res);
    expect(artifact).toMatchObject({
      conversation_id: conv,
      conversation_title: "Quarterly numbers",
      name: "report.csv",
      content_type: "text/csv; charset=utf-8",
      size: enc.encode(content).length,
      caption: "Q3 totals",
      sensitive: true,
      source: "upload",
      download_url: `https://svc.test/v1/api/artifacts/${artifact.id}/download`,
    });
    const object = await env.FILES.get(`artifacts/${ws.workspace.id}/${artifact.id}`);
    expect(await object!.text()).toBe(content);
    expect(object!.httpMetadata?.contentType).toBe("text/csv; charset=utf-8");
    const row = await rowOf(artifact.id);
    expect(row).toMatchObject({ producer_user_id: ws.user.id, sha256: await sha256Hex(enc.encode(content)) });

    const [event] = (await auditEvents(ws.workspace.id, "artifact.create")).filter(
      (e) => e.target === `artifact:${artifact.id}`,
    );
    expect(event).toMatchObject({ outcome: "success", intent: "upload", conversation_id: conv, actor_id: ws.user.id });
    expect(event!.details).toEqual({
      source: "upload",
      content_type: "text/csv; charset=utf-8",
      size: artifact.size,
      sensitive: true,
    });
    expect(JSON.stringify(event)).not.toContain("report");
  });

  it("accepts a standard client's FormData and keeps a non-ASCII name", async () => {
    const form = new FormData();
    form.append("file", new File([enc.encode("Grüße")], "Übersicht März.txt", { type: "text/plain" }));
    const res = await call("POST", `/v1/api/conversations/${conv}/artifacts`, { token: ws.adminToken, rawBody: form });
    const artifact = await uploaded(res);
    expect(artifact).toMatchObject({ name: "Übersicht März.txt", content_type: "text/plain", caption: null });
    expect(artifact.sensitive).toBe(false);
  });

  it("prefers filename* (RFC 5987) and falls back to octet-stream for a malformed part type", async () => {
    const res = await call("POST", `/v1/api/conversations/${conv}/artifacts`, {
      token: ws.adminToken,
      headers: { "Content-Type": formType() },
      rawBody: multipartBody([
        { name: "file", filename: "plain.txt", filenameStar: "résumé €.pdf", contentType: "not a type", content: "x" },
      ]),
    });
    expect(await uploaded(res)).toMatchObject({ name: "résumé €.pdf", content_type: "application/octet-stream" });
  });

  it("stores a file larger than one R2 part (multipart upload) byte for byte", async () => {
    const size = 11 * MiB + 123;
    const bytes = new Uint8Array(size);
    for (let i = 0; i < size; i += 4096) bytes[i] = (i / 4096) % 251;
    const res = await uploadFile(ws.adminToken, conv, { name: "big.bin", content: bytes });
    const artifact = await uploaded(res);
    expect(artifact.size).toBe(size);
    const object = await env.FILES.get(artifactKey(ws.workspace.id, artifact.id));
    const stored = new Uint8Array(await object!.arrayBuffer());
    expect(stored.length).toBe(size);
    expect(await sha256Hex(stored)).toBe(await sha256Hex(bytes));
    expect((await rowOf(artifact.id))!.sha256).toBe(await sha256Hex(bytes));
  });

  it("accepts exactly 25 MiB, streamed", async () => {
    const { body } = streamedForm(fileHead(), 25 * MiB, closing);
    const res = await call("POST", `/v1/api/conversations/${conv}/artifacts`, {
      token: ws.adminToken,
      headers: { "Content-Type": formType() },
      rawBody: body,
    });
    const artifact = await uploaded(res);
    expect(artifact.size).toBe(25 * MiB);
    expect((await env.FILES.head(artifactKey(ws.workspace.id, artifact.id)))!.size).toBe(25 * MiB);
  });

  it("refuses 25 MiB + 1 byte with 413 while streaming, and keeps nothing", async () => {
    const before = await env.DB.prepare("SELECT count(*) AS n FROM artifacts WHERE workspace_id = ?")
      .bind(ws.workspace.id)
      .first<{ n: number }>();
    const { body } = streamedForm(fileHead(), 25 * MiB + 1, closing);
    const res = await call("POST", `/v1/api/conversations/${conv}/artifacts`, {
      token: ws.adminToken,
      headers: { "Content-Type": formType() },
      rawBody: body,
    });
    await expectProblem(res, 413, "payload_too_large");
    const after = await env.DB.prepare("SELECT count(*) AS n FROM artifacts WHERE workspace_id = ?")
      .bind(ws.workspace.id)
      .first<{ n: number }>();
    expect(after!.n).toBe(before!.n);
    // every object under the workspace's prefix belongs to a row: nothing of the refused file was kept
    const listed = await env.FILES.list({ prefix: `artifacts/${ws.workspace.id}/` });
    const rows = await env.DB.prepare("SELECT id FROM artifacts WHERE workspace_id = ?").bind(ws.workspace.id).all();
    expect(listed.objects.length).toBe(rows.results.length);
  });

  it("stops reading a far larger stream soon after 25 MiB (the body is never buffered whole)", async () => {
    const { body, counter } = streamedForm(fileHead(), 200 * MiB, closing);
    const res = await call("POST", `/v1/api/conversations/${conv}/artifacts`, {
      token: ws.adminToken,
      headers: { "Content-Type": formType() },
      rawBody: body,
    });
    await expectProblem(res, 413, "payload_too_large");
    expect(counter.pulled).toBeLessThan(30 * MiB);
  });

  it("refuses a declared Content-Length over the limit before reading", async () => {
    const { body, counter } = streamedForm(fileHead(), 30 * MiB, closing);
    const res = await call("POST", `/v1/api/conversations/${conv}/artifacts`, {
      token: ws.adminToken,
      headers: { "Content-Type": formType(), "Content-Length": String(30 * MiB + 500) },
      rawBody: body,
    });
    await expectProblem(res, 413, "payload_too_large");
    expect(counter.pulled).toBeLessThan(MiB);
  });

  it("keeps nothing when the conversation is deleted while the file streams in (404)", async () => {
    const doomed = await seedConversation(ws.workspace.id, ws.user.id);
    const before = (await env.FILES.list({ prefix: `artifacts/${ws.workspace.id}/` })).objects.length;
    let deleted = false;
    const zeros = new Uint8Array(64 * 1024);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent === 0) controller.enqueue(enc.encode(fileHead("late.bin")));
        if (sent === 4 && !deleted) {
          await env.DB.prepare("DELETE FROM conversations WHERE id = ?").bind(doomed).run();
          deleted = true;
        }
        if (sent < 8) {
          sent++;
          return controller.enqueue(zeros);
        }
        controller.enqueue(enc.encode(closing));
        controller.close();
      },
    });
    const res = await call("POST", `/v1/api/conversations/${doomed}/artifacts`, {
      token: ws.adminToken,
      headers: { "Content-Type": formType() },
      rawBody: body,
    });
    await expectProblem(res, 404, "not_found");
    expect(deleted).toBe(true);
    expect((await env.FILES.list({ prefix: `artifacts/${ws.workspace.id}/` })).objects.length).toBe(before);
  });

  const BAD_FORMS: [string, () => BodyInit, string | undefined][] = [
    ["no file part", () => multipartBody([{ name: "caption", content: "hi" }]), undefined],
    ["an empty file", () => multipartBody([{ name: "file", filename: "e.txt", content: "" }]), undefined],
    [
      "two files",
      () =>
        multipartBody([
          { name: "file", filename: "a.txt", content: "a" },
          { name: "file", filename: "b.txt", content: "b" },
        ]),
      undefined,
    ],
    [
      "an unknown field",
      () =>
        multipartBody([
          { name: "file", filename: "a.txt", content: "a" },
          { name: "role", content: "admin" },
        ]),
      undefined,
    ],
    [
      "sensitive not a boolean",
      () =>
        multipartBody([
          { name: "file", filename: "a.txt", content: "a" },
          { name: "sensitive", content: "maybe" },
        ]),
      undefined,
    ],
    [
      "a caption over 1000 characters",
      () =>
        multipartBody([
          { name: "file", filename: "a.txt", content: "a" },
          { name: "caption", content: "c".repeat(1001) },
        ]),
      undefined,
    ],
    [
      "a truncated body",
      () => multipartBody([{ name: "file", filename: "a.txt", content: "abc" }]).slice(0, -10),
      undefined,
    ],
    ["no delimiter at all", () => "just some text", undefined],
    [
      "a part without Content-Disposition",
      () => `--${BOUNDARY}\r\nContent-Type: text/plain\r\n\r\nabc\r\n--${BOUNDARY}--\r\n`,
      undefined,
    ],
    ["an empty body", () => "", undefined],
    [
      "another boundary than declared",
      () => multipartBody([{ name: "file", filename: "a", content: "a" }], "other"),
      undefined,
    ],
  ];
  for (const [label, body] of BAD_FORMS) {
    it(`refuses ${label} with 400 and keeps nothing`, async () => {
      const before = (await env.FILES.list({ prefix: `artifacts/${ws.workspace.id}/` })).objects.length;
      const res = await call("POST", `/v1/api/conversations/${conv}/artifacts`, {
        token: ws.adminToken,
        headers: { "Content-Type": formType() },
        rawBody: body(),
      });
      await expectProblem(res, 400, "invalid_multipart");
      expect((await env.FILES.list({ prefix: `artifacts/${ws.workspace.id}/` })).objects.length).toBe(before);
    });
  }

  it("refuses a body that is not multipart/form-data with 415", async () => {
    for (const type of ["application/json", "multipart/form-data", "multipart/mixed; boundary=x", "text/plain"]) {
      const res = await call("POST", `/v1/api/conversations/${conv}/artifacts`, {
        token: ws.adminToken,
        headers: { "Content-Type": type },
        rawBody: '{"file": "x"}',
      });
      await expectProblem(res, 415, "unsupported_media_type");
    }
  });

  it("401 without a credential, 403 without conversations:write, 400 for a malformed id", async () => {
    await expectProblem(
      await call("POST", `/v1/api/conversations/${conv}/artifacts`, {
        headers: { "Content-Type": formType() },
        rawBody: multipartBody([{ name: "file", filename: "a", content: "a" }]),
      }),
      401,
    );
    await expectProblem(
      await uploadFile(readOnly.token, conv, { name: "a.txt", content: "a" }),
      403,
      "insufficient_scope",
    );
    await expectProblem(await uploadFile(ws.adminToken, "not-a-uuid", { name: "a.txt", content: "a" }), 400);
  });

  it("404 for a conversation the caller is not in, another workspace's, or an unknown one", async () => {
    await expectProblem(await uploadFile(member.token, conv, { name: "a.txt", content: "a" }), 404, "not_found");
    const foreign = await seedConversation(other.workspace.id, other.user.id);
    await expectProblem(await uploadFile(ws.adminToken, foreign, { name: "a.txt", content: "a" }), 404, "not_found");
    await expectProblem(
      await uploadFile(ws.adminToken, crypto.randomUUID(), { name: "a.txt", content: "a" }),
      404,
      "not_found",
    );
  });
});

describe("GET /v1/api/artifacts/{id}/download", () => {
  const content = "0123456789abcdefghij";
  let id: string;
  let etag: string;
  beforeAll(async () => {
    id = (await uploaded(await uploadFile(ws.adminToken, conv, { name: "notes.txt", content }))).id;
    etag = `"${await sha256Hex(enc.encode(content))}"`;
  });

  it("streams the bytes with the stored type, attachment disposition, nosniff, length and a strong ETag", async () => {
    const res = await download(ws.adminToken, id);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("text/plain");
    expect(res.headers.get("Content-Disposition")).toBe(`attachment; filename="notes.txt"; filename*=UTF-8''notes.txt`);
    expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(res.headers.get("Content-Security-Policy")).toBe("default-src 'none'; sandbox");
    expect(res.headers.get("Content-Length")).toBe(String(content.length));
    expect(res.headers.get("ETag")).toBe(etag);
    expect(res.headers.get("Accept-Ranges")).toBe("bytes");
    expect(await res.text()).toBe(content);
  });

  it("gives a non-ASCII name an ASCII fallback and the UTF-8 filename*", async () => {
    const art = await uploaded(
      await call("POST", `/v1/api/conversations/${conv}/artifacts`, {
        token: ws.adminToken,
        headers: { "Content-Type": formType() },
        rawBody: multipartBody([
          { name: "file", filename: "fallback.txt", filenameStar: 'Bericht "März" 100%.txt', content: "x" },
        ]),
      }),
    );
    expect(art.name).toBe('Bericht "März" 100%.txt');
    const res = await download(ws.adminToken, art.id);
    expect(res.headers.get("Content-Disposition")).toBe(
      `attachment; filename="Bericht _M_rz_ 100_.txt"; filename*=UTF-8''Bericht%20%22M%C3%A4rz%22%20100%25.txt`,
    );
    await res.arrayBuffer();
    expect(contentDisposition("日本語 (v2)*.pdf")).toBe(
      `attachment; filename="___ (v2)*.pdf"; filename*=UTF-8''%E6%97%A5%E6%9C%AC%E8%AA%9E%20%28v2%29%2A.pdf`,
    );
  });

  it("serves byte ranges with 206 and Content-Range", async () => {
    const cases: [string, string, string][] = [
      ["bytes=0-4", "01234", "bytes 0-4/20"],
      ["bytes=10-", "abcdefghij", "bytes 10-19/20"],
      ["bytes=-3", "hij", "bytes 17-19/20"],
      ["bytes=15-999", "fghij", "bytes 15-19/20"],
      ["bytes=-50", content, "bytes 0-19/20"],
    ];
    for (const [range, body, contentRange] of cases) {
      const res = await download(ws.adminToken, id, { Range: range });
      expect(res.status, range).toBe(206);
      expect(res.headers.get("Content-Range")).toBe(contentRange);
      expect(res.headers.get("Content-Length")).toBe(String(body.length));
      expect(res.headers.get("ETag")).toBe(etag);
      expect(await res.text()).toBe(body);
    }
  });

  it("416 for a range past the end; several or malformed ranges get the whole file", async () => {
    for (const range of ["bytes=20-", "bytes=100-200", "bytes=-0"]) {
      const res = await download(ws.adminToken, id, { Range: range });
      await expectProblem(res, 416, "range_not_satisfiable");
      expect(res.headers.get("Content-Range")).toBe("bytes */20");
    }
    for (const range of ["bytes=0-1,5-6", "items=0-1", "bytes=5-2", "bytes=x-y"]) {
      const res = await download(ws.adminToken, id, { Range: range });
      expect(res.status, range).toBe(200);
      expect(await res.text()).toBe(content);
    }
  });

  it("serves the stored bytes as they are to a client that accepts gzip: exact length, bytes and slices", async () => {
    const gzip = { "Accept-Encoding": "gzip, deflate, br" };
    const whole = await download(ws.adminToken, id, gzip);
    expect(whole.status).toBe(200);
    // identity keeps the runtime from compressing; no-transform asks the edge and proxies the same
    expect(whole.headers.get("Content-Encoding")).toBe("identity");
    expect(whole.headers.get("Cache-Control")).toBe("private, no-cache, no-transform");
    expect(whole.headers.get("Content-Length")).toBe(String(content.length));
    expect(whole.headers.get("ETag")).toBe(etag);
    expect(new Uint8Array(await whole.arrayBuffer())).toEqual(enc.encode(content));

    const slice = await download(ws.adminToken, id, { ...gzip, Range: "bytes=5-9" });
    expect(slice.status).toBe(206);
    expect(slice.headers.get("Content-Encoding")).toBe("identity");
    expect(slice.headers.get("Content-Range")).toBe("bytes 5-9/20");
    expect(slice.headers.get("Content-Length")).toBe("5");
    expect(new Uint8Array(await slice.arrayBuffer())).toEqual(enc.encode("56789"));

    const notModified = await download(ws.adminToken, id, { ...gzip, "If-None-Match": etag });
    expect(notModified.status).toBe(304);
    expect(notModified.headers.get("Cache-Control")).toBe("private, no-cache, no-transform");
  });

  it("honours If-None-Match (304) and If-Range (a stale tag gets the whole file)", async () => {
    const notModified = await download(ws.adminToken, id, { "If-None-Match": etag });
    expect(notModified.status).toBe(304);
    expect(notModified.headers.get("ETag")).toBe(etag);
    const stale = await download(ws.adminToken, id, { Range: "bytes=0-1", "If-Range": '"other"' });
    expect(stale.status).toBe(200);
    expect(await stale.text()).toBe(content);
    const fresh = await download(ws.adminToken, id, { Range: "bytes=0-1", "If-Range": etag });
    expect(fresh.status).toBe(206);
    expect(await fresh.text()).toBe("01");
  });

  it("any valid token may download what its user sees; others get 404, no credential 401", async () => {
    const anyScope = await addUser(ws.adminToken, "member", ["agents:read"]);
    const shared = await seedConversation(ws.workspace.id, ws.user.id, [ws.user.id, anyScope.user.id]);
    const art = await uploaded(await uploadFile(ws.adminToken, shared, { name: "s.txt", content: "shared" }));
    const ok = await download(anyScope.token, art.id);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe("shared");

    await expectProblem(await download(member.token, id), 404, "not_found");
    await expectProblem(await download(other.adminToken, id), 404, "not_found");
    await expectProblem(await download(ws.adminToken, crypto.randomUUID()), 404, "not_found");
    await expectProblem(await download(ws.adminToken, "not-a-uuid"), 400);
    await expectProblem(await call("GET", `/v1/api/artifacts/${id}/download`), 401);
  });

  it("parseRange covers the edge cases", () => {
    expect(parseRange("bytes=0-0", 1)).toEqual({ offset: 0, length: 1 });
    expect(parseRange("bytes=0-", 0)).toBe("unsatisfiable");
    expect(parseRange("bytes=-", 10)).toBeNull();
    expect(parseRange(" bytes=2-3 ", 10)).toEqual({ offset: 2, length: 2 });
  });
});

describe("GET /v1/api/artifacts", () => {
  it("lists what the caller may see: their conversations' artifacts and their own detached ones, newest first", async () => {
    const w = await signupWorkspace();
    const m = await addUser(w.adminToken, "member", ["conversations:read", "conversations:write"]);
    const adminOnly = await seedConversation(w.workspace.id, w.user.id);
    const both = await seedConversation(w.workspace.id, w.user.id, [w.user.id, m.user.id], null);
    const doomed = await seedConversation(w.workspace.id, m.user.id);
    const a1 = await uploaded(await uploadFile(w.adminToken, adminOnly, { name: "a1.txt", content: "1" }));
    const a2 = await uploaded(await uploadFile(w.adminToken, both, { name: "a2.txt", content: "2" }));
    const a3 = await uploaded(await uploadFile(m.token, doomed, { name: "a3.txt", content: "3" }));
    await detachConversationArtifacts(env, w.workspace.id, doomed);
    await env.DB.prepare("DELETE FROM conversations WHERE id = ?").bind(doomed).run();

    const list = async (token: string) =>
      (await parse(await call("GET", "/v1/api/artifacts", { token }), ArtifactListSchema)).artifacts;
    expect((await list(w.adminToken)).map((a) => a.id)).toEqual([a2.id, a1.id]);
    const mine = await list(m.token);
    expect(mine.map((a) => a.id)).toEqual([a3.id, a2.id]);
    expect(mine[0]).toMatchObject({ conversation_id: null, conversation_title: null });
    expect(mine[1]).toMatchObject({ conversation_id: both, conversation_title: null });
    expect((await list(w.adminToken))[1]).toMatchObject({ conversation_title: "Quarterly numbers" });
    // avatars live in R2 too, but are no artifacts
    expect((await list(w.adminToken)).some((a) => a.download_url.includes("avatars"))).toBe(false);
    expect(await list(other.adminToken)).not.toContainEqual(expect.objectContaining({ id: a1.id }));
  });

  it("caps the list at 500, newest first", async () => {
    const w = await signupWorkspace();
    const c = await seedConversation(w.workspace.id, w.user.id);
    const ids: string[] = [];
    const stmts = [];
    for (let i = 0; i < 505; i++) {
      const id = `0190f5e2-7c1a-7${String(i).padStart(3, "0")}-8000-000000000000`;
      ids.push(id);
      stmts.push(
        env.DB.prepare(
          "INSERT INTO artifacts (id, workspace_id, conversation_id, producer_user_id, name, content_type, size, sha256, source, created_at) VALUES (?, ?, ?, ?, 'f', 'text/plain', 1, 'x', 'upload', ?)",
        ).bind(id, w.workspace.id, c, w.user.id, new Date().toISOString()),
      );
    }
    await env.DB.batch(stmts);
    const res = await parse(await call("GET", "/v1/api/artifacts", { token: w.adminToken }), ArtifactListSchema);
    expect(res.artifacts.length).toBe(500);
    expect(res.artifacts.map((a) => a.id)).toEqual(ids.slice(5).reverse());
  });

  it("401 without a credential, 403 without conversations:read", async () => {
    await expectProblem(await call("GET", "/v1/api/artifacts"), 401);
    await expectProblem(await call("GET", "/v1/api/artifacts", { token: readOnly.token }), 403, "insufficient_scope");
  });
});

describe("DELETE /v1/api/artifacts/{id}", () => {
  it("a participant deletes it: row and bytes gone, later downloads 404, artifact.delete recorded", async () => {
    const art = await uploaded(await uploadFile(ws.adminToken, conv, { name: "gone.txt", content: "bye" }));
    const res = await call("DELETE", `/v1/api/artifacts/${art.id}`, { token: ws.adminToken });
    expect(await parse(res, ArtifactDeletedSchema)).toEqual({ id: art.id, deleted: true });
    expect(await rowOf(art.id)).toBeNull();
    expect(await env.FILES.head(artifactKey(ws.workspace.id, art.id))).toBeNull();
    await expectProblem(await download(ws.adminToken, art.id), 404);
    await expectProblem(await call("DELETE", `/v1/api/artifacts/${art.id}`, { token: ws.adminToken }), 404);
    const [event] = (await auditEvents(ws.workspace.id, "artifact.delete")).filter(
      (e) => e.target === `artifact:${art.id}` && e.outcome === "success",
    );
    expect(event).toMatchObject({ intent: "delete", conversation_id: conv, actor_id: ws.user.id });
    expect(event!.details).toEqual({ source: "upload", content_type: "text/plain", size: 3 });
  });

  it("403 for a member of the workspace who is not a participant (recorded as denied); 404 elsewhere", async () => {
    const art = await uploaded(await uploadFile(ws.adminToken, conv, { name: "kept.txt", content: "stay" }));
    await expectProblem(
      await call("DELETE", `/v1/api/artifacts/${art.id}`, { token: member.token }),
      403,
      "artifact_forbidden",
    );
    const denied = (await auditEvents(ws.workspace.id, "artifact.delete")).filter(
      (e) => e.target === `artifact:${art.id}`,
    );
    expect(denied.map((e) => [e.outcome, e.actor_id])).toEqual([["denied", member.user.id]]);
    await expectProblem(await call("DELETE", `/v1/api/artifacts/${art.id}`, { token: other.adminToken }), 404);
    await expectProblem(
      await call("DELETE", `/v1/api/artifacts/${crypto.randomUUID()}`, { token: ws.adminToken }),
      404,
    );
    await expectProblem(await call("DELETE", "/v1/api/artifacts/nope", { token: ws.adminToken }), 400);
    await expectProblem(await call("DELETE", `/v1/api/artifacts/${art.id}`), 401);
    await expectProblem(
      await call("DELETE", `/v1/api/artifacts/${art.id}`, { token: readOnly.token }),
      403,
      "insufficient_scope",
    );
    expect(await rowOf(art.id)).not.toBeNull();
    expect(await env.FILES.head(artifactKey(ws.workspace.id, art.id))).not.toBeNull();
  });

  it("once detached, only its producer may delete it", async () => {
    const w = await signupWorkspace();
    const m = await addUser(w.adminToken, "member", ["conversations:read", "conversations:write"]);
    const c = await seedConversation(w.workspace.id, w.user.id, [w.user.id, m.user.id]);
    const art = await uploaded(await uploadFile(m.token, c, { name: "m.txt", content: "m" }));
    await db(env).batch([detachConversationArtifacts(env, w.workspace.id, c)]);
    expect((await rowOf(art.id))!.conversation_id).toBeNull();
    await expectProblem(await call("DELETE", `/v1/api/artifacts/${art.id}`, { token: w.adminToken }), 403);
    await expectProblem(await download(w.adminToken, art.id), 404);
    expect((await download(m.token, art.id)).status).toBe(200);
    const res = await call("DELETE", `/v1/api/artifacts/${art.id}`, { token: m.token });
    expect(await parse(res, ArtifactDeletedSchema)).toEqual({ id: art.id, deleted: true });
  });
});

describe("the service for other areas", () => {
  it("detaching touches only that conversation of that workspace", async () => {
    const w = await signupWorkspace();
    const c1 = await seedConversation(w.workspace.id, w.user.id);
    const c2 = await seedConversation(w.workspace.id, w.user.id);
    const a1 = await uploaded(await uploadFile(w.adminToken, c1, { name: "1", content: "1" }));
    const a2 = await uploaded(await uploadFile(w.adminToken, c2, { name: "2", content: "2" }));
    await detachConversationArtifacts(env, other.workspace.id, c1);
    expect((await rowOf(a1.id))!.conversation_id).toBe(c1);
    await detachConversationArtifacts(env, w.workspace.id, c1);
    expect((await rowOf(a1.id))!.conversation_id).toBeNull();
    expect((await rowOf(a2.id))!.conversation_id).toBe(c2);
  });

  it("visibleArtifactIds keeps the existing, visible ids in order (deleted ones leave the transcript)", async () => {
    const w = await signupWorkspace();
    const m = await addUser(w.adminToken, "member", ["conversations:read", "conversations:write"]);
    const c = await seedConversation(w.workspace.id, w.user.id);
    const a = await uploaded(await uploadFile(w.adminToken, c, { name: "a", content: "a" }));
    const b = await uploaded(await uploadFile(w.adminToken, c, { name: "b", content: "b" }));
    const gone = await uploaded(await uploadFile(w.adminToken, c, { name: "g", content: "g" }));
    await call("DELETE", `/v1/api/artifacts/${gone.id}`, { token: w.adminToken });
    const many = Array.from({ length: 150 }, () => crypto.randomUUID());
    expect(await visibleArtifactIds(env, w.workspace.id, w.user.id, [b.id, gone.id, ...many, a.id])).toEqual([
      b.id,
      a.id,
    ]);
    expect(await visibleArtifactIds(env, w.workspace.id, m.user.id, [a.id, b.id])).toEqual([]);
    expect(await visibleArtifactIds(env, other.workspace.id, w.user.id, [a.id])).toEqual([]);
    expect(await visibleArtifactIds(env, w.workspace.id, w.user.id, [])).toEqual([]);
  });
});

describe("erasure", () => {
  it("deletes what the erased user produced in no remaining conversation, bytes too, and counts it", async () => {
    const w = await signupWorkspace();
    const m = await addUser(w.adminToken, "member", ["conversations:read", "conversations:write"]);
    const live = await seedConversation(w.workspace.id, w.user.id, [w.user.id, m.user.id]);
    const detached = await seedConversation(w.workspace.id, m.user.id);
    const vanished = await seedConversation(w.workspace.id, m.user.id);
    const kept = await uploaded(await uploadFile(m.token, live, { name: "kept", content: "k" }));
    const adminsOwn = await uploaded(await uploadFile(w.adminToken, live, { name: "admin", content: "a" }));
    const d = await uploaded(await uploadFile(m.token, detached, { name: "d", content: "d" }));
    const v = await uploaded(await uploadFile(m.token, vanished, { name: "v", content: "v" }));
    await detachConversationArtifacts(env, w.workspace.id, detached);
    await env.DB.prepare("DELETE FROM conversations WHERE id = ?").bind(vanished).run();

    const res = await call("POST", `/v1/admin/users/${m.user.id}/erase`, {
      token: w.adminToken,
      body: { confirm: true },
    });
    const summary = await parse(res, ErasureSummarySchema);
    expect(summary.counts.artifacts).toBe(2);
    for (const gone of [d, v]) {
      expect(await rowOf(gone.id)).toBeNull();
      expect(await env.FILES.head(artifactKey(w.workspace.id, gone.id))).toBeNull();
    }
    for (const stays of [kept, adminsOwn]) {
      expect(await rowOf(stays.id)).not.toBeNull();
      expect(await env.FILES.head(artifactKey(w.workspace.id, stays.id))).not.toBeNull();
    }
    // idempotent
    expect(await eraseArtifacts(env, w.workspace.id, m.user.id)).toEqual({ artifacts: 0 });
  });
});

describe("the deliver_file tool", () => {
  const scopeFor = (w: Ws, conversationId: string | null) => turnScopeFor(w, conversationId);
  const options = { toolCallId: "call-1", messages: [], context: {} };

  async function deliver(scope: TurnScope, input: Record<string, unknown>) {
    const { tools } = await artifactTools(scope);
    const t = tools.deliver_file!;
    return t.execute!(input as never, options) as Promise<{ artifact_id: string; download_url: string }>;
  }

  it("writes an artifact of the conversation produced by the turn's user, and lists it on the turn", async () => {
    const scope = scopeFor(ws, conv);
    const out = await deliver(scope, { name: "summary.md", content: "# Done\n", caption: "The summary" });
    expect(out.download_url).toBe(`https://svc.test/v1/api/artifacts/${out.artifact_id}/download`);
    expect(scope.artifactIds).toEqual([out.artifact_id]);
    expect(await rowOf(out.artifact_id)).toMatchObject({
      conversation_id: conv,
      producer_user_id: ws.user.id,
      agent_id: scope.agent.id,
      name: "summary.md",
      content_type: "text/markdown; charset=utf-8",
      caption: "The summary",
      source: "deliver_file",
    });
    const res = await download(ws.adminToken, out.artifact_id);
    expect(await res.text()).toBe("# Done\n");
    const [event] = (await auditEvents(ws.workspace.id, "artifact.create")).filter(
      (e) => e.target === `artifact:${out.artifact_id}`,
    );
    expect(event).toMatchObject({ intent: "deliver_file", conversation_id: conv, agent_id: scope.agent.id });
  });

  it("decodes base64 and takes an explicit content type", async () => {
    const scope = scopeFor(ws, conv);
    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    const out = await deliver(scope, {
      name: "blob",
      content: btoa(String.fromCharCode(...bytes)),
      encoding: "base64",
      content_type: "application/x-custom",
      sensitive: true,
    });
    const object = await env.FILES.get(artifactKey(ws.workspace.id, out.artifact_id));
    expect(new Uint8Array(await object!.arrayBuffer())).toEqual(bytes);
    expect(await rowOf(out.artifact_id)).toMatchObject({ content_type: "application/x-custom", sensitive: 1 });
  });

  it("refuses undecodable base64, empty content and more than 10 MiB with a clear error", async () => {
    const scope = scopeFor(ws, conv);
    await expect(deliver(scope, { name: "x", content: "not base64!!", encoding: "base64" })).rejects.toThrow(
      /not valid base64/,
    );
    await expect(deliver(scope, { name: "x", content: "" })).rejects.toThrow(/empty/);
    await expect(deliver(scope, { name: "x", content: "a".repeat(DELIVER_MAX_BYTES + 1) })).rejects.toThrow(/10 MiB/);
    await expect(
      deliver(scope, {
        name: "x",
        content: "A".repeat(Math.ceil((DELIVER_MAX_BYTES * 4) / 3) + 8),
        encoding: "base64",
      }),
    ).rejects.toThrow(/10 MiB/);
    expect(scope.artifactIds).toEqual([]);
  });

  it("describes its input with a strict schema the model sees", async () => {
    const { tools } = await artifactTools(scopeFor(ws, conv));
    const schema = tools.deliver_file!.inputSchema as unknown as { safeParse: (v: unknown) => { success: boolean } };
    expect(schema.safeParse({ name: "a", content: "b" }).success).toBe(true);
    expect(schema.safeParse({ name: "a", content: "b", encoding: "hex" }).success).toBe(false);
    expect(schema.safeParse({ name: "a", content: "b", extra: 1 }).success).toBe(false);
  });

  it("createArtifact rows are listed like uploads", async () => {
    const row = await createArtifact(
      env,
      {
        workspaceId: ws.workspace.id,
        conversationId: conv,
        producerUserId: ws.user.id,
        name: "img.png",
        contentType: "image/png",
        source: "generate_image",
      },
      new Uint8Array([1, 2, 3]),
      (r) => ({
        workspaceId: ws.workspace.id,
        kind: "artifact.create",
        actor: { kind: "system", id: null },
        target: `artifact:${r.id}`,
      }),
    );
    const list = await parse(await call("GET", "/v1/api/artifacts", { token: ws.adminToken }), ArtifactListSchema);
    expect(list.artifacts[0]).toMatchObject({ id: row.id, source: "generate_image", size: 3 });
  });
});

describe("the multipart reader", () => {
  /** `bytes` as a stream cut at the given sizes, cycling through them. */
  function chunked(bytes: Uint8Array, sizes: number[]): ReadableStream<Uint8Array> {
    let offset = 0;
    let i = 0;
    return new ReadableStream({
      pull(controller) {
        if (offset >= bytes.length) return controller.close();
        const n = sizes[i++ % sizes.length]!;
        controller.enqueue(bytes.slice(offset, offset + n));
        offset += n;
      },
    });
  }

  async function readAll(body: ReadableStream<Uint8Array>, boundary = BOUNDARY) {
    const reader = new MultipartReader(body, boundary);
    const parts: { name: string; filename: string | null; content: string }[] = [];
    for (let p = await reader.nextPart(); p; p = await reader.nextPart())
      parts.push({ name: p.name, filename: p.filename, content: await reader.readText(1 << 20) });
    return parts;
  }

  // Content that looks like the start of a delimiter, without being one.
  const tricky = `line\r\n--${BOUNDARY.slice(0, -1)}X\r\n-\r\n--\r\n${"\r".repeat(5)}end`;
  const form = multipartBody([
    { name: "file", filename: "t.txt", content: tricky },
    { name: "caption", content: "" },
    { name: "sensitive", content: "true" },
  ]);

  for (const sizes of [[1], [2, 3], [7, 1, 13], [BOUNDARY.length + 3], [form.length]]) {
    it(`reads the same parts whatever the chunking (${sizes.join(",")})`, async () => {
      expect(await readAll(chunked(form, sizes))).toEqual([
        { name: "file", filename: "t.txt", content: tricky },
        { name: "caption", filename: null, content: "" },
        { name: "sensitive", filename: null, content: "true" },
      ]);
    });
  }

  it("hands out a file's content while its part is still arriving, reading the source only as it is consumed", async () => {
    // The source sends a part's headers and 64 KiB chunks of content, never its end: a parser
    // that holds a part until its closing delimiter would wait here for ever.
    const chunk = new Uint8Array(64 * 1024).fill(7);
    let pulled = 0;
    const source = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(pulled === 0 ? enc.encode(fileHead()) : chunk);
        pulled++;
      },
    });
    const reader = new MultipartReader(source, BOUNDARY);
    expect(await reader.nextPart()).toMatchObject({ name: "file", filename: "big.bin" });
    let handedOut = 0;
    for (let i = 0; i < 10; i++) handedOut += (await reader.readChunk())!.length;
    expect(handedOut).toBeGreaterThan(9 * chunk.length);
    // a couple of chunks ahead at most (the stream's own read-ahead), not the rest of the body
    expect(pulled).toBeLessThanOrEqual(13);
    await reader.cancel();
  });

  it("skips a short preamble and transport padding, ignores the epilogue", async () => {
    const body = enc.encode(
      `preamble text\r\n--${BOUNDARY}  \t\r\nContent-Disposition: form-data; name="a"\r\n\r\nA\r\n--${BOUNDARY}--\r\nepilogue`,
    );
    expect(await readAll(chunked(body, [5]))).toEqual([{ name: "a", filename: null, content: "A" }]);
  });

  it("refuses oversized headers, too many parts and a field over its limit", async () => {
    const bigHeader = enc.encode(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="a"\r\nX-Pad: ${"p".repeat(9000)}\r\n\r\nA\r\n--${BOUNDARY}--\r\n`,
    );
    await expect(readAll(chunked(bigHeader, [1000]))).rejects.toBeInstanceOf(MultipartError);
    const many = multipartBody(Array.from({ length: 17 }, (_, i) => ({ name: `f${i}`, content: "x" })));
    await expect(readAll(chunked(many, [100]))).rejects.toThrow(/More than 16 parts/);
    const reader = new MultipartReader(chunked(multipartBody([{ name: "c", content: "x".repeat(50) }]), [8]), BOUNDARY);
    await reader.nextPart();
    await expect(reader.readText(10)).rejects.toThrow(/exceeds 10 bytes/);
  });

  it("takes the boundary only from multipart/form-data", () => {
    expect(formDataBoundary(`multipart/form-data; boundary="${BOUNDARY}"`)).toBe(BOUNDARY);
    expect(formDataBoundary("Multipart/Form-Data; charset=utf-8; boundary=abc")).toBe("abc");
    expect(formDataBoundary("multipart/mixed; boundary=abc")).toBeNull();
    expect(formDataBoundary("multipart/form-data")).toBeNull();
    expect(formDataBoundary(`multipart/form-data; boundary=${"b".repeat(71)}`)).toBeNull();
    expect(formDataBoundary(undefined)).toBeNull();
  });
});
