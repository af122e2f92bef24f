import { createExecutionContext, createMessageBatch, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import PostalMime from "postal-mime";
import { afterEach, describe, expect, it } from "vitest";
import { runEraseSteps } from "../src/admin/erase-service";
import { AREAS } from "../src/app";
import { emailArea } from "../src/email";
import { NO_COUNTS } from "../src/email/endpoint-counters";
import { headerBlock, MAX_EMAIL_BYTES } from "../src/email/inbound";
import { EndpointListSchema, EndpointSchema, ReplyListSchema, ReplyRowSchema } from "../src/email/schemas";
import { replySubject } from "../src/email/send";
import { triageMessage } from "../src/email/triage";
import { consumeTriage } from "../src/email/triage-queue";
import { matchesPattern } from "../src/email/triage-verdict";
import { registryOf } from "../src/http/area";
import worker from "../src/index";
import { createAgent } from "./support/agents";
import { call, expectProblem, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { eventually } from "./support/browser";
import { watchedDb } from "./support/d1";
import { type ChatRequest, fakeLlm, type Turn } from "./support/scripted-llm";
import { addUser, signupWorkspace } from "./support/seed";
import { unique } from "./support/unique";

const areas = registryOf(AREAS);
let llm: ReturnType<typeof fakeLlm> | null = null;
afterEach(() => {
  llm?.restore();
  llm = null;
});

type Ws = Awaited<ReturnType<typeof signupWorkspace>>;

/** Triage answers (structured output requests) and reply drafts, told apart by the request. */
function model(
  triage: Partial<{ category: string; summary: string; language: string; spam_score: number }>,
  reply = "Thanks for writing — we will ship on Friday.",
) {
  const verdict = {
    category: "question",
    summary: "Asks when the order ships",
    language: "en",
    spam_score: 0.05,
    ...triage,
  };
  const answer = (req: ChatRequest): Turn =>
    (req as ChatRequest & { response_format?: unknown }).response_format
      ? { text: JSON.stringify(verdict) }
      : { text: reply };
  llm = fakeLlm(answer);
  return llm;
}

/** A sent message as the EMAIL binding got it. */
type Sent = { from: string; to: string; raw: string };
function fakeSender(fail = false) {
  const sent: Sent[] = [];
  return {
    sent,
    binding: {
      send: async (m: { from: string; to: string }) => {
        if (fail) throw new Error("destination address not verified");
        // The test runtime's EmailMessage keeps the raw message it was built with under this key.
        const raw = (m as unknown as Record<string, string | ReadableStream>)["EmailMessage::raw"]!;
        sent.push({ from: m.from, to: m.to, raw: await new Response(raw).text() });
      },
    },
  };
}

const idFor = (() => {
  let n = 0;
  return () => `<m${Date.now()}.${n++}@sender.test>`;
})();

function rfc822(o: {
  from?: string;
  to: string;
  subject?: string;
  body?: string;
  messageId?: string | null;
  headers?: Record<string, string>;
}): string {
  const lines = [
    `From: Ada Lovelace <${o.from ?? "ada@sender.test"}>`,
    `To: ${o.to}`,
    `Subject: ${o.subject ?? "When does my order ship?"}`,
    "Date: Mon, 23 Nov 2026 10:00:00 +0000",
    ...(o.messageId === null ? [] : [`Message-ID: ${o.messageId ?? idFor()}`]),
    ...Object.entries(o.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=utf-8",
    "",
    o.body ?? "Hello, when will order 1042 ship?",
  ];
  return lines.join("\r\n");
}

const stream = (raw: string | Uint8Array) => new Response(raw).body!;

/** Delivers through the Worker's email handler; answers the rejection, if any. */
async function deliver(
  to: string,
  raw: string | Uint8Array,
  from = "ada@sender.test",
  rawSize?: number,
  DB: D1Database = env.DB,
) {
  let rejected: string | null = null;
  const bytes = typeof raw === "string" ? new TextEncoder().encode(raw) : raw;
  const message = {
    from,
    to,
    raw: stream(bytes),
    rawSize: rawSize ?? bytes.byteLength,
    headers: new Headers(),
    setReject: (reason: string) => {
      rejected = reason;
    },
    forward: async () => {},
    reply: async () => {},
  } as unknown as ForwardableEmailMessage;
  const ctx = createExecutionContext();
  // The queue is replaced by a recorder, so each test runs triage itself, deterministically.
  const queued: unknown[] = [];
  const recorder = { ...env, DB, EMAIL_TRIAGE: { send: async (b: unknown) => queued.push(b) } } as unknown as Env;
  await worker.email!(message, recorder, ctx);
  await waitOnExecutionContext(ctx);
  return { rejected: rejected as string | null, queued: queued as { message_id: string }[] };
}

async function endpoints(ws: Ws) {
  return parse(await call("GET", "/v1/api/email/endpoints", { token: ws.adminToken }), EndpointListSchema);
}

async function teamAddress(ws: Ws) {
  const list = await endpoints(ws);
  return list.endpoints.find((e) => e.is_system)!.address;
}

async function messageRow(id: string) {
  return env.DB.prepare("SELECT * FROM email_messages WHERE id = ?1").bind(id).first<Record<string, unknown>>();
}

async function replyOf(inboundId: string) {
  return env.DB.prepare("SELECT * FROM email_messages WHERE reply_to_id = ?1")
    .bind(inboundId)
    .first<Record<string, unknown>>();
}

/** Mails the address and triages the message (with `EMAIL` replaced when given). */
async function mailAndTriage(to: string, raw: string | Uint8Array, opts: { email?: unknown; from?: string } = {}) {
  const { queued, rejected } = await deliver(to, raw, opts.from);
  expect(rejected).toBeNull();
  const id = queued[0]!.message_id;
  await triageMessage({ ...env, ...(opts.email ? { EMAIL: opts.email } : {}) } as unknown as Env, id, false);
  return id;
}

async function patchTeam(ws: Ws, body: Record<string, unknown>) {
  const list = await endpoints(ws);
  const team = list.endpoints.find((e) => e.is_system)!;
  const res = await call("PATCH", `/v1/api/email/endpoints/${team.id}`, { token: ws.adminToken, body });
  expect(res.status).toBe(200);
  return parse(res, EndpointSchema);
}

describe("email endpoints", () => {
  it("gives every new workspace its system mailbox team, with counters and its address", async () => {
    const ws = await signupWorkspace();
    const list = await endpoints(ws);
    expect(list).toMatchObject({ outbound_mailbox_localpart: "team", domain: "mail.localhost" });
    expect(list.endpoints).toHaveLength(1);
    expect(list.endpoints[0]).toMatchObject({
      kind: "system",
      is_system: true,
      localpart: "team",
      plane: "team",
      reply_policy: "review",
      sender_policy: "anyone",
      enabled: true,
      ...NO_COUNTS,
      court_intake_enabled: false,
      address: `team-${list.tenant_email_slug}@mail.localhost`,
    });
  });

  it("creates, edits and deletes custom mailboxes, admin only, each change audited", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["email:read"]);
    expect((await call("GET", "/v1/api/email/endpoints")).status).toBe(401);
    await expectProblem(await call("GET", "/v1/api/email/endpoints", { token: member.token }), 403);
    await expectProblem(
      await call("POST", "/v1/api/email/endpoints", { token: member.token, body: { localpart: "sales" } }),
      403,
    );

    const res = await call("POST", "/v1/api/email/endpoints", {
      token: ws.adminToken,
      body: { localpart: "sales", reply_policy: "auto", sender_policy: "allowlist", allow_patterns: ["*@acme.test"] },
    });
    expect(res.status).toBe(201);
    const sales = await parse(res, EndpointSchema);
    expect(sales).toMatchObject({ kind: "custom", is_system: false, plane: "agent", reply_policy: "auto" });
    await expectProblem(
      await call("POST", "/v1/api/email/endpoints", { token: ws.adminToken, body: { localpart: "sales" } }),
      409,
      "localpart_taken",
    );
    await expectProblem(
      await call("POST", "/v1/api/email/endpoints", { token: ws.adminToken, body: { localpart: "postmaster" } }),
      400,
      "reserved_localpart",
    );
    await expectProblem(
      await call("POST", "/v1/api/email/endpoints", { token: ws.adminToken, body: { localpart: "Bad-Name" } }),
      400,
    );
    await expectProblem(
      await call("POST", "/v1/api/email/endpoints", {
        token: ws.adminToken,
        body: { localpart: "x", agent_id: crypto.randomUUID() },
      }),
      400,
      "invalid_agent",
    );

    const patched = await call("PATCH", `/v1/api/email/endpoints/${sales.id}`, {
      token: ws.adminToken,
      body: { enabled: false, max_turns_per_day: 5, spam_score_max: 0.5 },
    });
    expect(await parse(patched, EndpointSchema)).toMatchObject({
      enabled: false,
      max_turns_per_day: 5,
      spam_score_max: 0.5,
    });
    const team = (await endpoints(ws)).endpoints.find((e) => e.is_system)!;
    await expectProblem(
      await call("PATCH", `/v1/api/email/endpoints/${team.id}`, { token: ws.adminToken, body: { localpart: "crew" } }),
      400,
      "system_endpoint",
    );
    await expectProblem(
      await call("DELETE", `/v1/api/email/endpoints/${team.id}`, { token: ws.adminToken }),
      400,
      "system_endpoint",
    );
    const other = await signupWorkspace();
    await expectProblem(await call("DELETE", `/v1/api/email/endpoints/${sales.id}`, { token: other.adminToken }), 404);
    expect((await call("DELETE", `/v1/api/email/endpoints/${sales.id}`, { token: ws.adminToken })).status).toBe(204);
    await expectProblem(await call("DELETE", `/v1/api/email/endpoints/${sales.id}`, { token: ws.adminToken }), 404);

    const kinds = (await auditEvents(ws.workspace.id)).map((e) => e.kind);
    expect(kinds).toEqual(
      expect.arrayContaining(["email.endpoint.create", "email.endpoint.update", "email.endpoint.delete"]),
    );
    const [created] = await auditEvents(ws.workspace.id, "email.endpoint.create");
    expect(created).toMatchObject({ target: `email_endpoint:${sales.id}`, details: { localpart: "sales" } });
  });
});

describe("inbound mail", () => {
  it("stores a routed message (raw bytes in R2, a row, an event) and queues its triage", async () => {
    const ws = await signupWorkspace();
    const to = await teamAddress(ws);
    const raw = rfc822({ to });
    const { rejected, queued } = await deliver(to, raw);
    expect(rejected).toBeNull();
    expect(queued).toHaveLength(1);
    const row = await messageRow(queued[0]!.message_id);
    expect(row).toMatchObject({
      direction: "inbound",
      handling_state: "received",
      from_addr: "ada@sender.test",
      unrouted: 0,
    });
    expect(await (await env.FILES.get(row!.raw_key as string))!.text()).toBe(raw);
    const [event] = await auditEvents(ws.workspace.id, "email.receive");
    expect(event).toMatchObject({ target: `email_message:${row!.id}`, details: { unrouted: false, dmarc: "none" } });
    expect(JSON.stringify(event)).not.toContain("ada@sender.test");
  });

  it("refuses unknown workspaces, foreign domains and mail over 10 MiB, storing nothing", async () => {
    const ws = await signupWorkspace();
    const to = await teamAddress(ws);
    expect((await deliver("team-nobody-here@mail.localhost", rfc822({ to }))).rejected).toBe("Unknown address");
    expect((await deliver(to.replace("mail.localhost", "elsewhere.test"), rfc822({ to }))).rejected).toBe(
      "Unknown address",
    );
    const big = new Uint8Array(MAX_EMAIL_BYTES + 1).fill(65);
    const res = await deliver(to, big, "ada@sender.test");
    expect(res.rejected).toContain("10 MiB");
    expect(res.queued).toHaveLength(0);
    const count = await env.DB.prepare("SELECT count(*) AS n FROM email_messages WHERE workspace_id = ?1")
      .bind(ws.workspace.id)
      .first<{ n: number }>();
    expect(count?.n).toBe(0);
  });

  it("counts mail to an unknown mailbox of a known workspace as unrouted on the system endpoint", async () => {
    const ws = await signupWorkspace();
    const list = await endpoints(ws);
    const { queued } = await deliver(`nosuch-${list.tenant_email_slug}@mail.localhost`, rfc822({ to: "x" }));
    expect(await messageRow(queued[0]!.message_id)).toMatchObject({ unrouted: 1 });
    expect((await endpoints(ws)).endpoints[0]).toMatchObject({ unrouted: 1, received: 1, message_count: 1 });
  });

  it("routes to the mailbox of the address's own workspace, never to another's of the same name", async () => {
    const [first, second] = [await signupWorkspace(), await signupWorkspace()];
    const [firstList, secondList] = [await endpoints(first), await endpoints(second)];
    expect(firstList.endpoints[0]!.id).not.toBe(secondList.endpoints[0]!.id);
    for (const localpart of ["team", "nosuch"]) {
      const to = `${localpart}-${secondList.tenant_email_slug}@mail.localhost`;
      const { queued } = await deliver(to, rfc822({ to }));
      expect(await messageRow(queued[0]!.message_id)).toMatchObject({
        workspace_id: second.workspace.id,
        endpoint_id: secondList.endpoints[0]!.id,
        unrouted: localpart === "team" ? 0 : 1,
      });
    }
  });

  it("ignores a sub-address tag (team-slug+tag@, team+tag-slug@)", async () => {
    const ws = await signupWorkspace();
    const slug = (await endpoints(ws)).tenant_email_slug;
    for (const to of [`team-${slug}+orders@mail.localhost`, `team+orders-${slug}@mail.localhost`]) {
      const { queued, rejected } = await deliver(to, rfc822({ to }));
      expect(rejected).toBeNull();
      expect(await messageRow(queued[0]!.message_id)).toMatchObject({ unrouted: 0 });
    }
    expect((await endpoints(ws)).endpoints[0]).toMatchObject({ received: 2, unrouted: 0 });
  });

  it("routes the previous slug within its 30 days, and not after", async () => {
    const ws = await signupWorkspace();
    const before = await endpoints(ws);
    const slug = `renamed-${unique()}`;
    expect((await call("POST", "/v1/api/admin/workspace/slug", { token: ws.adminToken, body: { slug } })).status).toBe(
      200,
    );
    const old = `team-${before.tenant_email_slug}@mail.localhost`;
    expect((await deliver(old, rfc822({ to: old }))).rejected).toBeNull();
    expect((await deliver(`team-${slug}@mail.localhost`, rfc822({ to: old }))).rejected).toBeNull();
    await env.DB.prepare("UPDATE email_slugs SET routes_until = ?2 WHERE slug = ?1")
      .bind(before.tenant_email_slug, new Date(Date.now() - 1000).toISOString())
      .run();
    expect((await deliver(old, rfc822({ to: old }))).rejected).toBe("Unknown address");
  });

  it("mails an address it has seen in one D1 round trip, and follows its route when it changes, keeping no stray bytes", async () => {
    const ws = await signupWorkspace();
    const created = await call("POST", "/v1/api/email/endpoints", {
      token: ws.adminToken,
      body: { localpart: "orders" },
    });
    expect(created.status).toBe(201);
    const orders = await parse(created, EndpointSchema);
    const system = (await endpoints(ws)).endpoints.find((e) => e.is_system)!;
    const to = orders.address;
    const watched = watchedDb();
    const mail = async () => {
      const before = watched.trips.n;
      const { queued, rejected } = await deliver(to, rfc822({ to }), "ada@sender.test", undefined, watched.binding);
      expect(rejected).toBeNull();
      return { row: await messageRow(queued[0]!.message_id), trips: watched.trips.n - before };
    };

    const first = await mail();
    expect(first.row).toMatchObject({ endpoint_id: orders.id, unrouted: 0 });
    const second = await mail();
    expect(second.row).toMatchObject({ endpoint_id: orders.id, unrouted: 0 });
    // The route lookup is spared: the row is written where the address still routes so.
    expect(second.trips).toBe(first.trips - 1);

    expect((await call("DELETE", `/v1/api/email/endpoints/${orders.id}`, { token: ws.adminToken })).ok).toBe(true);
    const third = await mail();
    expect(third.row).toMatchObject({ endpoint_id: system.id, unrouted: 1 });
    const stored = await env.FILES.list({ prefix: `email/${ws.workspace.id}/` });
    const rows = await env.DB.prepare("SELECT raw_key FROM email_messages WHERE workspace_id = ?1")
      .bind(ws.workspace.id)
      .all<{ raw_key: string }>();
    expect(stored.objects.map((o) => o.key).sort()).toEqual(rows.results.map((r) => r.raw_key).sort());
  });

  it("parses multipart mail with an attachment, a Latin-1 body and no Message-ID", async () => {
    const ws = await signupWorkspace();
    const to = await teamAddress(ws);
    const latin1 = Uint8Array.from("Grüße aus Köln", (c) => c.charCodeAt(0)); // ISO-8859-1: one byte a letter
    const head = new TextEncoder().encode(
      [
        "From: =?ISO-8859-1?Q?J=FCrgen?= <juergen@sender.test>",
        `To: ${to}`,
        "Subject: =?ISO-8859-1?Q?Gr=FC=DFe?=",
        "MIME-Version: 1.0",
        'Content-Type: multipart/mixed; boundary="XYZ"',
        "",
        "--XYZ",
        "Content-Type: text/plain; charset=ISO-8859-1",
        "Content-Transfer-Encoding: 8bit",
        "",
        "",
      ].join("\r\n"),
    );
    const tail = new TextEncoder().encode(
      [
        "",
        "--XYZ",
        'Content-Type: application/pdf; name="order.pdf"',
        "Content-Transfer-Encoding: base64",
        'Content-Disposition: attachment; filename="order.pdf"',
        "",
        btoa("%PDF-1.4 fake"),
        "--XYZ--",
        "",
      ].join("\r\n"),
    );
    const raw = new Uint8Array([...head, ...latin1, ...tail]);
    const m = model({ language: "de" }, "Danke!");
    const id = await mailAndTriage(to, raw, { from: "juergen@sender.test" });
    const row = await messageRow(id);
    expect(row).toMatchObject({ subject: "Grüße", message_id_header: null, from_addr: "juergen@sender.test" });
    const triagePrompt = JSON.stringify(m.requests[0]!.messages);
    expect(triagePrompt).toContain("Grüße aus Köln");
    const reply = await replyOf(id);
    expect(reply).toMatchObject({ handling_state: "awaiting_review", subject: "Grüße" });
  });

  it("takes the row's fields from the header block alone; the body, header-like lines included, changes none", async () => {
    const ws = await signupWorkspace();
    const to = await teamAddress(ws);
    const raw = [
      "From: Ada <ada@sender.test>",
      `To: ${to}`,
      "Subject: The real subject",
      "Message-ID: <real@sender.test>",
      "",
      "Subject: not a header",
      "Message-ID: <body@sender.test>",
      "Auto-Submitted: auto-replied",
      "",
    ].join("\r\n");
    const { rejected, queued } = await deliver(to, raw);
    expect(rejected).toBeNull();
    const row = await messageRow(queued[0]!.message_id);
    expect(row).toMatchObject({
      subject: "The real subject",
      message_id_header: "<real@sender.test>",
      auto_submitted: 0,
    });
    expect(await (await env.FILES.get(row!.raw_key as string))!.text()).toBe(raw);
  });

  it("finds the header block's end after CRLF or LF lines, and takes a message without a body whole", () => {
    const bytes = (s: string) => new TextEncoder().encode(s);
    const text = (b: Uint8Array) => new TextDecoder().decode(b);
    expect(text(headerBlock(bytes("Subject: a\r\nTo: b\r\n\r\nbody\r\n")))).toBe("Subject: a\r\nTo: b\r\n\r\n");
    expect(text(headerBlock(bytes("Subject: a\nTo: b\n\nbody\n")))).toBe("Subject: a\nTo: b\n\n");
    expect(text(headerBlock(bytes("Subject: a\r\nTo: b\r\n")))).toBe("Subject: a\r\nTo: b\r\n");
  });
});

describe("triage and reply policies", () => {
  it("review: parks the agent's draft for the review owner, debits it and audits the verdict", async () => {
    const ws = await signupWorkspace();
    const to = await teamAddress(ws);
    model({});
    const id = await mailAndTriage(to, rfc822({ to }));
    expect(await messageRow(id)).toMatchObject({
      handling_state: "awaiting_review",
      llm_category: "question",
      language: "en",
    });
    const reply = await replyOf(id);
    expect(reply).toMatchObject({
      direction: "outbound",
      handling_state: "awaiting_review",
      review_owner_id: ws.user.id,
      from_addr: to,
      to_addrs: JSON.stringify(["ada@sender.test"]),
      body: "Thanks for writing — we will ship on Friday.",
    });
    const debit = await env.DB.prepare("SELECT amount FROM credit_ledger WHERE reference = ?1 AND kind = 'usage'")
      .bind(reply!.id)
      .first<{ amount: number }>();
    expect(debit?.amount).toBeLessThan(0);
    // The draft is written without tools: the mail is an outsider's text.
    const draftRequest = llm!.requests.find((r) => !(r as { response_format?: unknown }).response_format)!;
    expect(draftRequest.tools ?? []).toEqual([]);
    const rows = await parse(await call("GET", "/v1/api/email/replies", { token: ws.adminToken }), ReplyListSchema);
    expect(rows.rows).toHaveLength(1);
    expect(rows.rows[0]).toMatchObject({
      email_message_id: reply!.id,
      handling_state: "awaiting_review",
      llm_category: "question",
      llm_summary: "Asks when the order ships",
      endpoint_localpart: "team",
      endpoint_plane: "team",
    });
    const [event] = await auditEvents(ws.workspace.id, "email.triage");
    expect(event).toMatchObject({ details: { state: "awaiting_review", category: "question", reply_id: reply!.id } });
    expect((await endpoints(ws)).endpoints[0]).toMatchObject({ awaiting_review: 1, needs_attention: 1, received: 1 });
  });

  it("auto: sends the reply at once as a threaded answer from the mailbox", async () => {
    const ws = await signupWorkspace();
    const to = await teamAddress(ws);
    await patchTeam(ws, { reply_policy: "auto" });
    model({});
    const sender = fakeSender();
    const messageId = idFor();
    const id = await mailAndTriage(
      to,
      rfc822({ to, subject: "Re: RE: Order 1042", messageId, headers: { References: "<root@sender.test>" } }),
      { email: sender.binding },
    );
    expect(sender.sent).toHaveLength(1);
    const sent = sender.sent[0]!;
    expect(sent).toMatchObject({ from: to, to: "ada@sender.test" });
    const parsed = await PostalMime.parse(sent.raw);
    expect(parsed.subject).toBe("Re: Order 1042");
    expect(parsed.inReplyTo).toBe(messageId);
    expect(parsed.references).toBe(`<root@sender.test> ${messageId}`);
    expect(parsed.from?.address).toBe(to);
    expect(parsed.text?.trim()).toBe("Thanks for writing — we will ship on Friday.");
    expect(await messageRow(id)).toMatchObject({ handling_state: "replied" });
    expect(await replyOf(id)).toMatchObject({ handling_state: "sent" });
    const list = await endpoints(ws);
    expect(list.endpoints[0]).toMatchObject({ replied: 1, reply_languages: { en: 1 } });
    expect((await auditEvents(ws.workspace.id, "email.send"))[0]).toMatchObject({ outcome: "success" });
  });

  it("a reply to our reply continues the thread: the draft sees the earlier mail and what we sent", async () => {
    const ws = await signupWorkspace();
    const to = await teamAddress(ws);
    await patchTeam(ws, { reply_policy: "auto" });
    const m = model({}, "Order 1042 ships on Friday.");
    const sender = fakeSender();
    const first = await mailAndTriage(
      to,
      rfc822({ to, subject: "Order 1042", body: "When does order 1042 ship?", messageId: "<q1@sender.test>" }),
      { email: sender.binding },
    );
    const ours = (await replyOf(first))!;
    const sentId = (await PostalMime.parse(sender.sent[0]!.raw)).messageId;
    expect(sentId).toBe(`<${ours.id}@mail.localhost>`);
    expect(ours).toMatchObject({ message_id_header: sentId });

    const followUp = await mailAndTriage(
      to,
      rfc822({
        to,
        subject: "Re: Order 1042",
        body: "Can it come sooner?",
        messageId: "<q2@sender.test>",
        headers: { "In-Reply-To": sentId!, References: `<q1@sender.test> ${sentId}` },
      }),
      { email: sender.binding },
    );
    expect(await replyOf(followUp)).toMatchObject({ handling_state: "sent" });
    const draft = m.requests.at(-1)!.messages.map((x) => ({ role: x.role, content: JSON.stringify(x.content) }));
    const earlier = draft.findIndex((x) => x.role === "user" && x.content.includes("When does order 1042 ship?"));
    expect(earlier).toBeGreaterThan(-1);
    expect(draft[earlier + 1]).toMatchObject({ role: "assistant" });
    expect(draft[earlier + 1]!.content).toContain("Order 1042 ships on Friday.");
    expect(draft.at(-1)!.content).toContain("Can it come sooner?");

    // Another workspace's thread, or a mail naming an id we never sent, brings no history.
    const stranger = await mailAndTriage(
      to,
      rfc822({
        to,
        body: "Unrelated",
        headers: { References: "<00000000-0000-0000-0000-000000000000@mail.localhost>" },
      }),
      { email: sender.binding },
    );
    expect(await replyOf(stranger)).toMatchObject({ handling_state: "sent" });
    expect(m.requests.at(-1)!.messages.filter((x) => x.role === "assistant")).toHaveLength(0);
  });

  it("never answers with reply_policy never, and spam above the threshold is spam", async () => {
    const ws = await signupWorkspace();
    const to = await teamAddress(ws);
    await patchTeam(ws, { reply_policy: "never" });
    model({});
    const quiet = await mailAndTriage(to, rfc822({ to }));
    expect(await messageRow(quiet)).toMatchObject({ handling_state: "no_reply", llm_category: "question" });
    expect(await replyOf(quiet)).toBeNull();
    llm?.restore();
    await patchTeam(ws, { reply_policy: "auto", spam_score_max: 0.5 });
    model({ spam_score: 0.7, category: "sales" });
    const spam = await mailAndTriage(to, rfc822({ to }));
    expect(await messageRow(spam)).toMatchObject({ handling_state: "spam", spam_score_pct: 70 });
    expect(await replyOf(spam)).toBeNull();
  });

  it("applies the sender policy: members only, or an allow-list of globs", async () => {
    const ws = await signupWorkspace();
    const to = await teamAddress(ws);
    const member = await addUser(ws.adminToken, "member", ["email:read"]);
    await patchTeam(ws, { sender_policy: "members" });
    const m = model({});
    const stranger = await mailAndTriage(to, rfc822({ to }));
    expect(await messageRow(stranger)).toMatchObject({ handling_state: "rejected_sender" });
    expect(m.requests).toHaveLength(0);
    const colleague = await mailAndTriage(to, rfc822({ to, from: member.email }), { from: member.email });
    expect(await messageRow(colleague)).toMatchObject({ handling_state: "awaiting_review" });
    await patchTeam(ws, { sender_policy: "allowlist", allow_patterns: ["*@partner.test"] });
    const partner = await mailAndTriage(to, rfc822({ to, from: "bob@partner.test" }), { from: "bob@partner.test" });
    expect(await messageRow(partner)).toMatchObject({ handling_state: "awaiting_review" });
    expect(matchesPattern("Bob@Partner.test", "*@partner.test")).toBe(true);
    expect(matchesPattern("bob@partner.test.evil", "*@partner.test")).toBe(false);
    // A From address the sender's domain disowns (DMARC fail) passes neither policy.
    const dmarcFail = {
      "Authentication-Results": "mx.test; spf=fail smtp.mailfrom=partner.test; dmarc=fail header.from=partner.test",
    };
    const forgedPartner = await mailAndTriage(to, rfc822({ to, from: "bob@partner.test", headers: dmarcFail }), {
      from: "bob@partner.test",
    });
    expect(await messageRow(forgedPartner)).toMatchObject({ handling_state: "rejected_sender", dmarc: "fail" });
    await patchTeam(ws, { sender_policy: "members" });
    const forgedMember = await mailAndTriage(to, rfc822({ to, from: member.email, headers: dmarcFail }), {
      from: member.email,
    });
    expect(await messageRow(forgedMember)).toMatchObject({ handling_state: "rejected_sender", dmarc: "fail" });
  });

  it("never answers auto-submitted mail (RFC 3834) and never auto-answers a DMARC failure", async () => {
    const ws = await signupWorkspace();
    const to = await teamAddress(ws);
    await patchTeam(ws, { reply_policy: "auto" });
    const m = model({});
    const sender = fakeSender();
    const bounce = await mailAndTriage(to, rfc822({ to, headers: { "Auto-Submitted": "auto-replied" } }), {
      email: sender.binding,
    });
    const list = await mailAndTriage(to, rfc822({ to, headers: { Precedence: "bulk" } }), { email: sender.binding });
    expect(await messageRow(bounce)).toMatchObject({ handling_state: "no_reply", auto_submitted: 1 });
    expect(await messageRow(list)).toMatchObject({ handling_state: "no_reply", auto_submitted: 1 });
    const others = [
      await mailAndTriage(to, rfc822({ to, headers: { "List-Id": "<news.sender.test>" } }), { email: sender.binding }),
      await mailAndTriage(to, rfc822({ to, headers: { "X-Auto-Response-Suppress": "DR, AutoReply" } }), {
        email: sender.binding,
      }),
      await mailAndTriage(to, rfc822({ to, from: "MAILER-DAEMON@relay.test" }), {
        email: sender.binding,
        from: "MAILER-DAEMON@relay.test",
      }),
      await mailAndTriage(to, rfc822({ to }), { email: sender.binding, from: "" }),
    ];
    for (const id of others)
      expect(await messageRow(id)).toMatchObject({ handling_state: "no_reply", auto_submitted: 1 });
    expect(m.requests).toHaveLength(0);
    const forged = await mailAndTriage(
      to,
      rfc822({
        to,
        headers: {
          "Authentication-Results": "mx.test; spf=fail smtp.mailfrom=sender.test; dmarc=fail header.from=sender.test",
        },
      }),
      { email: sender.binding },
    );
    expect(await messageRow(forged)).toMatchObject({ dmarc: "fail", handling_state: "awaiting_review" });
    expect(sender.sent).toHaveLength(0);
  });

  it("stops replying at the daily limits, per endpoint and per sender", async () => {
    const ws = await signupWorkspace();
    const to = await teamAddress(ws);
    await patchTeam(ws, { max_turns_per_sender_day: 1, max_turns_per_day: 2 });
    model({});
    const first = await mailAndTriage(to, rfc822({ to }));
    const second = await mailAndTriage(to, rfc822({ to }));
    const other = await mailAndTriage(to, rfc822({ to, from: "bob@sender.test" }), { from: "bob@sender.test" });
    const third = await mailAndTriage(to, rfc822({ to, from: "carol@sender.test" }), { from: "carol@sender.test" });
    expect(await messageRow(first)).toMatchObject({ handling_state: "awaiting_review" });
    expect(await messageRow(second)).toMatchObject({ handling_state: "no_reply" });
    expect(await messageRow(other)).toMatchObject({ handling_state: "awaiting_review" });
    expect(await messageRow(third)).toMatchObject({ handling_state: "no_reply" });
    const reasons = (await auditEvents(ws.workspace.id, "email.triage")).map((e) => e.details.reason);
    expect(reasons).toEqual(expect.arrayContaining(["sender_daily_limit", "daily_limit"]));
  });

  it("escalates a category the policy escalates, and ignores one it ignores", async () => {
    const ws = await signupWorkspace();
    const to = await teamAddress(ws);
    await patchTeam(ws, { allow_escalation: true, category_policy: { complaint: "escalate", notification: "ignore" } });
    model({ category: "complaint" });
    const angry = await mailAndTriage(to, rfc822({ to }));
    expect(await messageRow(angry)).toMatchObject({ handling_state: "escalated" });
    llm?.restore();
    model({ category: "notification" });
    const note = await mailAndTriage(to, rfc822({ to }));
    expect(await messageRow(note)).toMatchObject({ handling_state: "no_reply" });
    expect((await endpoints(ws)).endpoints[0]).toMatchObject({ escalated: 1, needs_attention: 1 });
  });

  it("runs through the queue: the consumer decides each message once, a failing one ends dead_letter", async () => {
    const ws = await signupWorkspace();
    const to = await teamAddress(ws);
    model({});
    const { queued } = await deliver(to, rfc822({ to }));
    const id = queued[0]!.message_id;
    const batch = createMessageBatch<unknown>("email-triage", [
      { id: "a", timestamp: new Date(), attempts: 1, body: { message_id: id } },
      { id: "b", timestamp: new Date(), attempts: 1, body: { message_id: id } },
      { id: "c", timestamp: new Date(), attempts: 1, body: { nonsense: true } },
    ]);
    const ctx = createExecutionContext();
    await emailArea.queues!["email-triage"]!(batch, env, areas);
    expect((await getQueueResult(batch, ctx)).explicitAcks.sort()).toEqual(["a", "b", "c"]);
    const replies = await env.DB.prepare("SELECT count(*) AS n FROM email_messages WHERE reply_to_id = ?1")
      .bind(id)
      .first<{ n: number }>();
    expect(replies?.n).toBe(1);

    llm?.restore();
    llm = fakeLlm({ status: 500 });
    const failing = (await deliver(to, rfc822({ to }))).queued[0]!.message_id;
    for (const attempts of [1, 2, 3]) {
      const b = createMessageBatch<unknown>("email-triage", [
        { id: `f${attempts}`, timestamp: new Date(), attempts, body: { message_id: failing } },
      ]);
      await consumeTriage(b, env);
      const result = await getQueueResult(b, createExecutionContext());
      if (attempts < 3) expect(result.retryMessages.map((m) => m.msgId)).toEqual([`f${attempts}`]);
      else expect(result.explicitAcks).toEqual(["f3"]);
    }
    expect(await messageRow(failing)).toMatchObject({ handling_state: "dead_letter" });
  });

  it("the real queue carries a message from the handler to its draft", async () => {
    const ws = await signupWorkspace();
    const to = await teamAddress(ws);
    model({});
    const ctx = createExecutionContext();
    const message = {
      from: "ada@sender.test",
      to,
      raw: stream(rfc822({ to })),
      rawSize: 500,
      headers: new Headers(),
      setReject: () => {
        throw new Error("rejected");
      },
    } as unknown as ForwardableEmailMessage;
    await worker.email!(message, env, ctx);
    await waitOnExecutionContext(ctx);
    await eventually(async () => {
      const rows = await parse(await call("GET", "/v1/api/email/replies", { token: ws.adminToken }), ReplyListSchema);
      return rows.rows.length === 1;
    }, 15_000);
  });
});

// "enabled → disabled by DELETE /v1/agents/{id}: Agent stops routing on every surface";
// "disabled → enabled by POST /v1/agents/{id}/enable: Routing restored on all surfaces".
describe("which agent answers a mailbox", () => {
  const agentOf = async (inboundId: string) => (await replyOf(inboundId))?.agent_id ?? null;

  it("a mailbox that names no agent falls back to the default agent, never to a disabled one", async () => {
    const ws = await signupWorkspace();
    const to = await teamAddress(ws);
    const { agents } = (await (await call("GET", "/v1/agents", { token: ws.adminToken })).json()) as {
      agents: { id: string; is_default: boolean }[];
    };
    const assistant = agents.find((a) => a.is_default)!;
    const retired = await createAgent(ws.adminToken, { slug: "retired", display_name: "Retired" });
    expect((await call("DELETE", `/v1/agents/${retired.id}`, { token: ws.adminToken })).status).toBe(200);
    model({});
    expect(await agentOf(await mailAndTriage(to, rfc822({ to })))).toBe(assistant.id);
    // The fallback follows the default flag, and the flag is never on a disabled agent.
    const next = await createAgent(ws.adminToken, { slug: "next", display_name: "Next" });
    expect((await call("POST", `/v1/agents/${next.id}/default`, { token: ws.adminToken })).status).toBe(200);
    await expectProblem(await call("POST", `/v1/agents/${retired.id}/default`, { token: ws.adminToken }), 400);
    expect(await agentOf(await mailAndTriage(to, rfc822({ to })))).toBe(next.id);
    const replies = await env.DB.prepare("SELECT count(*) AS n FROM email_messages WHERE agent_id = ?1")
      .bind(retired.id)
      .first<{ n: number }>();
    expect(replies!.n).toBe(0);
  });

  it("mail to a disabled agent's mailbox is kept but reaches no agent (no draft, no debit); enabling restores it", async () => {
    const ws = await signupWorkspace();
    const sales = await createAgent(ws.adminToken, { slug: "sales", display_name: "Sales" });
    const created = await call("POST", "/v1/api/email/endpoints", {
      token: ws.adminToken,
      body: { localpart: "sales", agent_id: sales.id },
    });
    expect(created.status).toBe(201);
    const to = (await parse(created, EndpointSchema)).address;
    expect((await call("DELETE", `/v1/agents/${sales.id}`, { token: ws.adminToken })).status).toBe(200);

    const m = model({});
    const id = await mailAndTriage(to, rfc822({ to }));
    expect(await messageRow(id)).toMatchObject({ handling_state: "no_reply", raw_key: expect.any(String) });
    expect(await replyOf(id)).toBeNull();
    // Nobody drafts in its place: no model call at all.
    expect(m.requests).toHaveLength(0);
    const debits = await env.DB.prepare(
      "SELECT count(*) AS n FROM credit_ledger WHERE workspace_id = ?1 AND kind = 'usage'",
    )
      .bind(ws.workspace.id)
      .first<{ n: number }>();
    expect(debits!.n).toBe(0);
    const [event] = await auditEvents(ws.workspace.id, "email.triage");
    expect(event!.details).toMatchObject({ state: "no_reply", reason: "agent_disabled", agent_id: sales.id });

    expect((await call("POST", `/v1/agents/${sales.id}/enable`, { token: ws.adminToken })).status).toBe(200);
    const again = await mailAndTriage(to, rfc822({ to }));
    expect(await messageRow(again)).toMatchObject({ handling_state: "awaiting_review" });
    expect(await agentOf(again)).toBe(sales.id);
  });
});

describe("review queue", () => {
  async function drafted(ws: Ws) {
    const to = await teamAddress(ws);
    model({});
    const id = await mailAndTriage(to, rfc822({ to, subject: "Order 1042" }));
    return (await replyOf(id))!.id as string;
  }

  const review = (token: string, id: string, body: Record<string, unknown>, overrides: Record<string, unknown> = {}) =>
    worker.fetch(
      new Request(`http://localhost/v1/api/email/replies/${id}/review`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${token}`,
          "Content-Type": "application/json",
          "CF-Connecting-IP": "10.9.9.9",
        },
        body: JSON.stringify(body),
      }),
      { ...env, ...overrides } as Env,
      createExecutionContext(),
    );

  it("lets the owner approve (sending the edited text) once; others get 404; a second review 409", async () => {
    const ws = await signupWorkspace();
    const id = await drafted(ws);
    const other = await addUser(ws.adminToken, "admin", ["email:read"]);
    await expectProblem(await review(other.token, id, { action: "approve" }), 404);
    const sender = fakeSender();
    const res = await review(
      ws.adminToken,
      id,
      { action: "approve", body: "Shipping Friday. — Ada" },
      { EMAIL: sender.binding },
    );
    expect(res.status).toBe(200);
    expect(await parse(res, ReplyRowSchema)).toMatchObject({ handling_state: "sent", body: "Shipping Friday. — Ada" });
    expect((await PostalMime.parse(sender.sent[0]!.raw)).text?.trim()).toBe("Shipping Friday. — Ada");
    await expectProblem(await review(ws.adminToken, id, { action: "reject" }), 409, "already_reviewed");
    const reviewed = await parse(
      await call("GET", "/v1/api/email/replies?reviewed=true", { token: ws.adminToken }),
      ReplyListSchema,
    );
    expect(reviewed.rows.map((r) => r.email_message_id)).toEqual([id]);
    expect(
      (await parse(await call("GET", "/v1/api/email/replies", { token: ws.adminToken }), ReplyListSchema)).rows,
    ).toEqual([]);
    expect((await auditEvents(ws.workspace.id, "email.review"))[0]).toMatchObject({
      intent: "approve",
      details: { edited: true },
    });
  });

  it("rejects a draft; a failed send is send_failed with its error and can be retried", async () => {
    const ws = await signupWorkspace();
    const first = await drafted(ws);
    const rejected = await review(ws.adminToken, first, { action: "reject" });
    expect(await parse(rejected, ReplyRowSchema)).toMatchObject({ handling_state: "rejected" });
    llm?.restore();
    const second = await drafted(ws);
    const failed = await review(ws.adminToken, second, { action: "approve" }, { EMAIL: fakeSender(true).binding });
    expect(await parse(failed, ReplyRowSchema)).toMatchObject({
      handling_state: "send_failed",
      last_error: expect.stringContaining("not verified"),
    });
    const sender = fakeSender();
    const retried = await review(ws.adminToken, second, { action: "approve" }, { EMAIL: sender.binding });
    expect(await parse(retried, ReplyRowSchema)).toMatchObject({ handling_state: "sent" });
    expect(sender.sent).toHaveLength(1);
    const sends = (await auditEvents(ws.workspace.id, "email.send")).map((e) => e.outcome);
    expect(sends.sort()).toEqual(["error", "success"]);
  });

  it("answers 400 to a malformed body or reviewed value and 401 without a token", async () => {
    const ws = await signupWorkspace();
    await expectProblem(await call("GET", "/v1/api/email/replies?reviewed=maybe", { token: ws.adminToken }), 400);
    expect((await call("GET", "/v1/api/email/replies")).status).toBe(401);
    await expectProblem(
      await call("POST", `/v1/api/email/replies/${crypto.randomUUID()}/review`, {
        token: ws.adminToken,
        body: { action: "maybe" },
      }),
      400,
    );
    await expectProblem(
      await call("POST", `/v1/api/email/replies/${crypto.randomUUID()}/review`, {
        token: ws.adminToken,
        body: { action: "approve" },
      }),
      404,
    );
  });

  // spec: "`GET /v1/api/email/replies` ... Returns only replies whose `review_owner_id` is the caller." — all of them
  it("pages the replies newest first with limit and cursor, dropping none past 200", async () => {
    const ws = await signupWorkspace();
    const colleague = await addUser(ws.adminToken, "admin", ["email:read"]);
    const team = (await endpoints(ws)).endpoints.find((e) => e.is_system)!;
    const at = (i: number) => new Date(Date.UTC(2030, 0, 1, 0, 0, Math.floor(i / 3))).toISOString(); // ties by 3
    const insert = env.DB.prepare(
      `INSERT INTO email_messages (id, workspace_id, endpoint_id, direction, from_addr, to_addrs, handling_state,
         review_owner_id, body, occurred_at, updated_at)
       VALUES (?1, ?2, ?3, 'outbound', 'team@svc.test', '["ada@sender.test"]', ?4, ?5, 'Draft', ?6, ?6)`,
    );
    const mine = Array.from({ length: 205 }, (_, i) => ({ id: crypto.randomUUID(), at: at(i) }));
    await env.DB.batch([
      ...mine.map((r) => insert.bind(r.id, ws.workspace.id, team.id, "awaiting_review", ws.user.id, r.at)),
      insert.bind(crypto.randomUUID(), ws.workspace.id, team.id, "awaiting_review", colleague.user.id, at(0)),
      insert.bind(crypto.randomUUID(), ws.workspace.id, team.id, "sent", ws.user.id, at(0)),
    ]);
    const newestFirst = [...mine]
      .sort((a, b) => (a.at === b.at ? (a.id < b.id ? 1 : -1) : a.at < b.at ? 1 : -1))
      .map((r) => r.id);
    const page = async (query: string) =>
      parse(await call("GET", `/v1/api/email/replies${query}`, { token: ws.adminToken }), ReplyListSchema);

    const first = await page("");
    expect(first.rows.map((r) => r.email_message_id)).toEqual(newestFirst.slice(0, 50));
    expect(first.next_cursor).toEqual(expect.any(String));

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const p = await page(cursor ? `?limit=100&cursor=${encodeURIComponent(cursor)}` : "?limit=100");
      expect(p.rows.length).toBeLessThanOrEqual(100);
      seen.push(...p.rows.map((r) => r.email_message_id));
      cursor = p.next_cursor;
    } while (cursor);
    expect(seen).toEqual(newestFirst);

    const reviewed = await page("?reviewed=true&limit=1");
    expect(reviewed.rows).toHaveLength(1);
    expect(reviewed.next_cursor).toBeNull();
    for (const bad of ["?limit=0", "?limit=101", "?limit=x", "?cursor=bm9wZQ", "?cursor=%25%25"])
      await expectProblem(await call("GET", `/v1/api/email/replies${bad}`, { token: ws.adminToken }), 400);
    await expectProblem(
      await call("GET", "/v1/api/email/replies?cursor=bm9wZQ", { token: ws.adminToken }),
      400,
      "invalid_cursor",
    );
  });

  it("moves an erased reviewer's pending replies to another admin; the mail stays", async () => {
    const ws = await signupWorkspace();
    const second = await addUser(ws.adminToken, "admin", ["email:read"]);
    const team = (await endpoints(ws)).endpoints.find((e) => e.is_system)!;
    await call("PATCH", `/v1/api/email/endpoints/${team.id}`, {
      token: ws.adminToken,
      body: { deliver_to: { user_ids: [second.user.id] } },
    });
    const id = await drafted(ws);
    expect((await messageRow(id))!.review_owner_id).toBe(second.user.id);
    const counts = await runEraseSteps(
      env,
      [{ area: "email", step: emailArea.eraseStep! }],
      ws.workspace.id,
      second.user.id,
    );
    expect(counts).toMatchObject({ email_reviews_moved: 1 });
    expect((await messageRow(id))!.review_owner_id).toBe(ws.user.id);
  });
});

describe("sending", () => {
  it("says Re: once", () => {
    expect(replySubject("Order")).toBe("Re: Order");
    expect(replySubject("RE: re:Order")).toBe("Re: Order");
    expect(replySubject(null)).toBe("Re: your message");
  });
});
