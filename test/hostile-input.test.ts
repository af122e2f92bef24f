import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { auditLog } from "../durable-objects/audit-log/client";
import { deliverNow } from "../src/audit/delivery";
import { rememberFact } from "../src/memory/service";
import { createAgent, IMAGES } from "./support/agents";
import { call } from "./support/api";
import { formType, multipartBody, seedConversation, uploadFile } from "./support/artifacts";
import { factEvent } from "./support/audit";
import { TENANT_SEEDERS } from "./support/common-routes";
import { REDIRECT, registerClient } from "./support/oauth";
import { addUser, PASSWORD, signupWorkspace } from "./support/seed";
import { unique } from "./support/unique";

/**
 * Every operation of the OpenAPI document gets hostile input: malformed JSON, JSON of the
 * wrong kind (array, string, null), every field of the wrong type, a 100 KB string in each
 * field, unknown fields, a wrong Content-Type, an over-limit body, path parameters that
 * are not UUIDs, unknown UUIDs or another workspace's ids, and on every string parameter and
 * field its documented maximum length made of multi-byte characters (the most bytes the
 * document allows). Every answer has a status the document lists for the operation (and a
 * 5xx only with its own code, never the catch-all), and every 4xx has its documented shape: a
 * problem body, the OAuth error shape on OAuth endpoints, an HTML page on browser pages.
 */

type Schema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  maxItems?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
};
type Operation = {
  parameters?: { name: string; in: string; schema?: Schema }[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, unknown>;
};
type OpenApiDoc = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } };

const docRes = await call("GET", "/v1/openapi.json");
const DOC = (await docRes.json()) as OpenApiDoc;
const OPERATIONS = Object.entries(DOC.paths).flatMap(([path, ops]) =>
  Object.entries(ops).map(([method, op]) => ({
    method: method.toUpperCase(),
    path,
    op,
    key: `${method.toUpperCase()} ${path}`,
  })),
);

/** Where the hostile checks do not apply, and why. */
const SKIPPED: Record<string, string> = {
  "GET /v1/agent-browser/connect":
    "a WebSocket upgrade: no body, no parameters; its refusals are tested in browser.test.ts",
};

const KB100 = "x".repeat(100 * 1024);
/**
 * The longest values a string of `maxLength` may be, in the most bytes: one UTF-16 unit and
 * three UTF-8 bytes per character ("€"), and one code point but four bytes and two UTF-16
 * units per character ("😀", JSON Schema counts code points).
 */
const longest = (maxLength: number) => ["€".repeat(maxLength), "😀".repeat(maxLength)];
const UNKNOWN_UUID = "0190f5e2-7c1a-7000-8000-000000000000";
const NOT_UUIDS = [
  "not-a-uuid",
  "0190f5e2-7c1a-7000-8000-00000000000g",
  "%E2%80%AE%00",
  "..%2F..%2Fetc",
  "x".repeat(5000),
  "' OR 1=1 --",
];

type Shape = "problem" | "oauth" | "jsonrpc" | "openai";
/** The OpenAI-compatible routes answer in OpenAI's error shape, for OpenAI clients. */
const OPENAI_PATHS = new Set(["/v1/models", "/v1/chat/completions"]);
// The authorize endpoint shows a browser an HTML page; these requests, like a program's, prefer no HTML.
const shapeOf = (path: string, method: string): Shape =>
  path.startsWith("/v1/oauth/") || path.startsWith("/.well-known/")
    ? "oauth"
    : path === "/v1/mcp" && method === "POST"
      ? "jsonrpc"
      : OPENAI_PATHS.has(path)
        ? "openai"
        : "problem";

function resolve(schema: Schema | undefined): Schema {
  let s = schema ?? {};
  for (let i = 0; s.$ref && i < 10; i++) s = DOC.components.schemas[s.$ref.replace("#/components/schemas/", "")] ?? {};
  return s;
}

/** The JSON type a schema asks for (null aside), or undefined when it does not say. */
function jsonType(schema: Schema | undefined): string | undefined {
  const s = resolve(schema);
  if (Array.isArray(s.type)) return s.type.find((t) => t !== "null");
  if (s.type) return s.type;
  for (const alt of [...(s.anyOf ?? []), ...(s.oneOf ?? []), ...(s.allOf ?? [])]) {
    const t = jsonType(alt);
    if (t && t !== "null") return t;
  }
  const literal = s.enum?.[0] ?? s.const;
  return literal === undefined ? undefined : typeof literal;
}

const WRONG: Record<string, unknown> = {
  string: 12345,
  number: "12",
  integer: "12",
  boolean: "true",
  array: "a,b",
  object: ["x"],
};

function bodySchema(op: Operation): Schema | undefined {
  const content = op.requestBody?.content;
  return resolve(content?.["application/json"]?.schema);
}

// ---- fixtures: the caller's workspace (A) and another one (B) ----

let A: Awaited<ReturnType<typeof signupWorkspace>>;
let B: Awaited<ReturnType<typeof signupWorkspace>>;
const own: Record<string, string> = {};
const foreign: Record<string, string> = {};
let registrationToken: string;
/** A client the token, introspection and revocation cases use (the management cases delete the other one). */
let tokenClientId: string;
let skillSlug: string;
let mcpSlug: string;

beforeAll(async () => {
  [A, B] = await Promise.all([signupWorkspace(), signupWorkspace()]);
  const [agentA, agentB, memberA, memberB, clientA, clientB, tokenClient] = await Promise.all([
    createAgent(A.adminToken, { slug: `hostile-${unique()}`, display_name: "Hostile" }),
    createAgent(B.adminToken, { slug: `other-${unique()}`, display_name: "Other" }),
    addUser(A.adminToken, "member", ["agents:read"]),
    addUser(B.adminToken, "member", ["agents:read"]),
    registerClient(A.adminToken),
    registerClient(B.adminToken),
    registerClient(A.adminToken),
  ]);
  tokenClientId = tokenClient.client_id;
  const tokensA = await call("GET", "/v1/api/admin/tokens", { token: A.adminToken });
  const tokenB = await call("GET", "/v1/api/admin/tokens", { token: B.adminToken });
  const memberTokenA = ((await tokensA.json()) as { tokens: { id: string; user_id: string }[] }).tokens.find(
    (t) => t.user_id === memberA.user.id,
  )!;
  const adminTokenB = ((await tokenB.json()) as { tokens: { id: string; user_id: string }[] }).tokens[0]!;
  own.agent = agentA.id;
  foreign.agent = agentB.id;
  own.user = memberA.user.id;
  foreign.user = memberB.user.id;
  // The revoke route revokes the member's token, never the caller's.
  own.token = memberTokenA.id;
  foreign.token = adminTokenB.id;
  own.client = clientA.client_id;
  foreign.client = clientB.client_id;
  registrationToken = clientA.registration_access_token!;
  own.agentSlug = agentA.slug;
  foreign.agentSlug = agentB.slug;
  const assistant = { slug: "assistant", handles: ["assistant"] };
  own.fact = (await rememberFact(
    env,
    { workspaceId: A.workspace.id, userId: A.user.id },
    assistant,
    "Own fact",
    factEvent({ workspaceId: A.workspace.id, userId: A.user.id }),
  ))!.id;
  foreign.fact = (await rememberFact(
    env,
    { workspaceId: B.workspace.id, userId: B.user.id },
    assistant,
    "Other",
    factEvent({ workspaceId: B.workspace.id, userId: B.user.id }),
  ))!.id;
  own.workspace = A.workspace.id;
  own.auditSeq = "1";
  foreign.workspace = B.workspace.id;
  for (const [ws, ids] of [
    [A, own],
    [B, foreign],
  ] as const) {
    const endpoint = await call("POST", "/v1/api/email/endpoints", {
      token: ws.adminToken,
      body: { localpart: `h${unique()}` },
    });
    ids.emailEndpoint = ((await endpoint.json()) as { id: string }).id;
    // A drafted reply awaiting its owner's review (triage needs a model; the row is what matters here).
    ids.emailReply = crypto.randomUUID();
    await env.DB.prepare(
      `INSERT INTO email_messages (id, workspace_id, endpoint_id, direction, from_addr, to_addrs, handling_state,
         review_owner_id, body, occurred_at, updated_at)
       VALUES (?1, ?2, ?3, 'outbound', 'team@mail.localhost', '["ada@sender.test"]', 'awaiting_review', ?4, 'Hi', ?5, ?5)`,
    )
      .bind(ids.emailReply, ws.workspace.id, ids.emailEndpoint, ws.user.id, new Date().toISOString())
      .run();
  }
  for (const [ws, ids] of [
    [A, own],
    [B, foreign],
  ] as const) {
    const slug = `m${unique()}`;
    await call("POST", "/v1/mcp/custom", {
      token: ws.adminToken,
      body: { slug, name: "Hostile", url: "https://hostile.test/mcp" },
    });
    ids.customMcp = `t:${slug}`;
    const connector = await call("POST", "/v1/mcp/connectors", { token: ws.adminToken, body: { name: "Hostile" } });
    ids.connector = ((await connector.json()) as { connector_id: string }).connector_id;
  }
  own.conversation = await seedConversation(A.workspace.id, A.user.id);
  foreign.conversation = await seedConversation(B.workspace.id, B.user.id);
  for (const [ws, ids] of [
    [A, own],
    [B, foreign],
  ] as const) {
    const res = await uploadFile(ws.adminToken, ids.conversation!, { name: "hostile.txt", content: "bytes" });
    ids.artifact = ((await res.json()) as { id: string }).id;
  }
  for (const [ws, ids] of [
    [A, own],
    [B, foreign],
  ] as const) {
    ids.app = await TENANT_SEEDERS.app(ws);
  }
  own.avatarHash = /\/v1\/avatars\/[^/]+\/([0-9a-f]{64})$/.exec(agentA.avatar_url!)![1]!;
  const skills = (await (await call("GET", "/v1/api/skills", { token: A.adminToken })).json()) as {
    skills: { slug: string }[];
  };
  const servers = (await (await call("GET", "/v1/api/mcp/servers", { token: A.adminToken })).json()) as {
    mcp_servers: { slug: string }[];
  };
  skillSlug = skills.skills[0]!.slug;
  mcpSlug = servers.mcp_servers[0]!.slug;
});

/** The resource each path parameter names, per path. */
function paramKind(
  path: string,
  name: string,
):
  | "agent"
  | "user"
  | "token"
  | "client"
  | "workspace"
  | "avatarHash"
  | "skill"
  | "mcp"
  | "conversation"
  | "fact"
  | "agentSlug"
  | "artifact"
  | "app"
  | "emailEndpoint"
  | "emailReply"
  | "customMcp"
  | "connector"
  | "auditSeq" {
  if (path.startsWith("/v1/agents/{id}")) return "agent";
  if (path.startsWith("/v1/api/conversations/{id}")) return "conversation";
  if (path === "/v1/admin/users/{id}/erase") return "user";
  if (path === "/v1/api/admin/tokens/{id}") return "token";
  if (path === "/v1/oauth/register/{client_id}") return "client";
  if (path === "/v1/avatars/{workspace_id}/{hash}") return name === "workspace_id" ? "workspace" : "avatarHash";
  if (path === "/v1/api/skills/{slug}") return "skill";
  if (path === "/v1/api/mcp/servers/{slug}") return "mcp";
  if (path === "/v1/memory/facts/{id}") return "fact";
  if (path === "/v1/memory/freeze/{agent_slug}") return "agentSlug";
  if (path === "/v1/api/conversations/{id}/artifacts") return "conversation";
  if (path === "/v1/api/chat/{id}/stream") return "conversation";
  if (path.startsWith("/v1/api/artifacts/{id}")) return "artifact";
  if (path === "/v1/api/apps/{id}") return "app";
  if (path === "/v1/api/email/endpoints/{id}") return "emailEndpoint";
  if (path === "/v1/api/email/replies/{email_message_id}/review") return "emailReply";
  if (path === "/v1/mcp/custom/{slug}") return "customMcp";
  if (path === "/v1/mcp/connectors/{id}") return "connector";
  if (path === "/v1/admin/audit/events/{seq}") return "auditSeq";
  throw new Error(`hostile-input.test.ts does not know which resource {${name}} of ${path} names: add it to paramKind`);
}

function ownValue(path: string, name: string): string {
  const kind = paramKind(path, name);
  return kind === "skill" ? skillSlug : kind === "mcp" ? mcpSlug : own[kind]!;
}

const fill = (path: string, values: (name: string) => string) =>
  path.replace(/\{([^}]+)\}/g, (_, name: string) => values(name));

/** A body each JSON-body operation accepts, so that one bad part at a time can be tested. */
function validBody(key: string): Record<string, unknown> {
  const bodies: Record<string, () => Record<string, unknown>> = {
    "POST /v1/api/signup": () => ({
      workspace_name: "Valid Co",
      email: `v-${unique()}@example.com`,
      password: PASSWORD,
    }),
    "POST /v1/api/me/erase": () => ({ confirm: true, password: PASSWORD }),
    "POST /v1/api/admin/users": () => ({ email: `u-${unique()}@example.com`, role: "member" }),
    "POST /v1/api/admin/tokens": () => ({ name: "valid", scopes: ["agents:read"] }),
    "POST /v1/admin/users/{id}/erase": () => ({ confirm: true }),
    "POST /v1/agents": () => ({ slug: `v-${unique()}`, display_name: "Valid" }),
    "PATCH /v1/agents/{id}": () => ({ display_name: "Valid" }),
    "POST /v1/agents/{id}/avatar": () => ({ image_base64: IMAGES.png }),
    "POST /v1/agents/{id}/avatar/generate": () => ({ prompt: "a friendly fox" }),
    "PUT /v1/agents/{id}/skills": () => ({ skills: [] }),
    "PUT /v1/agents/{id}/mcp": () => ({ mcp_servers: [] }),
    "POST /v1/api/admin/workspace/slug": () => ({ slug: `v-${unique()}` }),
    "POST /v1/agent-browser/ask": () => ({ prompt: "What page is open?" }),
    "POST /v1/oauth/register": () => ({ redirect_uris: [REDIRECT], scope: "agents:read" }),
    "PUT /v1/oauth/register/{client_id}": () => ({ redirect_uris: [REDIRECT], scope: "agents:read" }),
    "POST /v1/oauth/token": () => ({
      grant_type: "refresh_token",
      refresh_token: "svc_rt_unknown",
      client_id: tokenClientId,
    }),
    "POST /v1/oauth/introspect": () => ({ token: "svc_at_unknown", client_id: tokenClientId }),
    "POST /v1/api/billing/checkout": () => ({ plan_slug: "pro" }),
    "POST /v1/api/billing/topup": () => ({ pack_slug: "credits-1000" }),
    "POST /v1/oauth/revoke": () => ({ token: "svc_at_unknown", client_id: tokenClientId }),
    "POST /v1/api/conversations": () => ({ title: "Valid" }),
    "POST /v1/api/conversations/{id}/participants": () => ({ user_id: own.user }),
    "POST /v1/api/conversations/{id}/messages": () => ({ content: "hello" }),
    "POST /v1/api/conversations/{id}/approvals/{approval_id}": () => ({ approved: true }),
    "POST /v1/api/chat": () => ({
      id: `chat-${unique()}`,
      messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "hello" }] }],
    }),
    "PUT /v1/memory/freeze/{agent_slug}": () => ({ reason: "hostile" }),
    "POST /v1/api/artifacts/{id}/deliver": () => ({ channel_id: "C0CHAN", message: "hostile" }),
    "PUT /v1/api/business-profile": () => ({ summary: "A hostile-input bakery" }),
    "POST /v1/api/email/endpoints": () => ({ localpart: `v${unique()}` }),
    "PATCH /v1/api/email/endpoints/{id}": () => ({ enabled: true }),
    "POST /v1/api/email/replies/{email_message_id}/review": () => ({ action: "reject" }),
    "POST /v1/mcp/custom": () => ({ slug: `v${unique()}`, name: "Valid", url: "https://valid.test/mcp" }),
    "POST /v1/mcp/connectors": () => ({ name: "Valid" }),
    "POST /v1/mcp/connectors/enroll": () => ({ csr_pem: "not a csr", token: "svc_enroll_unknown" }),
    "POST /v1/mcp": () => ({ jsonrpc: "2.0", id: 1, method: "ping" }),
    "POST /v1/chat/completions": () => ({ model: "default", messages: [{ role: "user", content: "hello" }] }),
  };
  const make = bodies[key];
  if (!make) throw new Error(`hostile-input.test.ts has no valid body for ${key}: add one`);
  return make();
}

/** The credential a path takes: the registration access token for client management, else the admin's PAT. */
const tokenFor = (path: string) => (path === "/v1/oauth/register/{client_id}" ? registrationToken : A.adminToken);

type Case = {
  label: string;
  path: string;
  body?: BodyInit;
  contentType?: string | null;
  audited?: boolean;
  expect?: "4xx" | 404 | 200 | 204;
};

/** Events in A's chain, counting those committed but not yet delivered (as an admin reads them). */
async function auditTotal(): Promise<number> {
  await deliverNow(env, A.workspace.id);
  return (await auditLog(env, A.workspace.id).list({ days: 0 }, { page: 1, pageSize: 1 })).total;
}

async function check(op: (typeof OPERATIONS)[number], c: Case, failures: string[]): Promise<void> {
  const headers: Record<string, string> = {};
  if (c.contentType) headers["Content-Type"] = c.contentType;
  const before = c.audited === false ? await auditTotal() : 0;
  const res = await call(op.method, c.path, { token: tokenFor(op.path), headers, rawBody: c.body });
  const text = await res.text();
  const where = `${op.key} [${c.label}] → ${res.status}`;
  const fail = (why: string) => failures.push(`${where}: ${why}: ${text.slice(0, 300)}`);
  const type = res.headers.get("Content-Type") ?? "";
  const shape = shapeOf(op.path, op.method);
  let json: Record<string, unknown> | null = null;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = null;
  }

  // Every status the server answers is one the document lists for the operation.
  if (!(String(res.status) in op.op.responses)) return void fail("status not documented for this operation");
  // A documented 5xx is an answer only with its own code, never the catch-all.
  const openAiCode = (json?.error as { code?: unknown } | undefined)?.code;
  if (
    res.status >= 500 &&
    (json?.code === "internal_error" || json?.error === "server_error" || openAiCode === "internal_error")
  )
    return void fail("unexpected 5xx");
  if (c.expect === "4xx" && (res.status < 400 || res.status >= 500)) fail("expected a 4xx");
  if (c.expect === 404 && res.status !== 404) fail("expected 404");
  if (c.expect === 200 && res.status !== 200) fail("expected 200");
  if (c.expect === 204 && res.status !== 204) fail("expected 204");
  if (res.status >= 400) {
    if (shape === "problem") {
      if (!type.startsWith("application/problem+json")) fail(`not application/problem+json but ${type}`);
      else if (json?.status !== res.status || typeof json.code !== "string" || typeof json.title !== "string")
        fail("not a problem body");
    } else if (shape === "oauth") {
      if (!type.startsWith("application/json")) fail(`not application/json but ${type}`);
      else if (typeof json?.error !== "string") fail("not an OAuth error body");
    } else if (shape === "openai") {
      const error = json?.error as { message?: unknown; type?: unknown; code?: unknown } | undefined;
      if (!type.startsWith("application/json")) fail(`not application/json but ${type}`);
      else if (typeof error?.message !== "string" || typeof error.type !== "string" || typeof error.code !== "string")
        fail("not an OpenAI error body");
    } else if (shape === "jsonrpc") {
      // The MCP endpoint: refusals before the message is read are problems, the rest JSON-RPC errors.
      const problemShaped = type.startsWith("application/problem+json") && json?.status === res.status;
      const rpcError = json?.error as { code?: unknown } | undefined;
      const rpcShaped =
        type.startsWith("application/json") && json?.jsonrpc === "2.0" && typeof rpcError?.code === "number";
      if (!problemShaped && !rpcShaped) fail("neither a problem nor a JSON-RPC error");
    }
  }
  if (c.audited === false) {
    const after = await auditTotal();
    if (after !== before) fail(`refused input still recorded ${after - before} audit event(s)`);
  }
}

/**
 * Operations the spec makes idempotent for a value that names nothing: unknown, another
 * workspace's or malformed (within the documented length), they answer 200 and record nothing.
 */
const IDEMPOTENT_FOR_NOTHING = new Set(["DELETE /v1/memory/freeze/{agent_slug}"]);

/**
 * Ids a client chooses freely (AI SDK chat ids, 1-128 characters): whatever names no chat of
 * the caller, another workspace's conversation id included, answers 204 and records nothing.
 */
const CLIENT_CHOSEN_IDS = new Set(["GET /v1/api/chat/{id}/stream"]);

/** Path-parameter cases: malformed values, an unknown UUID, another workspace's id. */
function pathCases(op: (typeof OPERATIONS)[number]): Case[] {
  const names = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
  const cases: Case[] = [];
  const idempotent = IDEMPOTENT_FOR_NOTHING.has(op.key);
  const clientChosen = CLIENT_CHOSEN_IDS.has(op.key);
  const nothing: Pick<Case, "expect" | "audited"> = clientChosen
    ? { expect: 204, audited: false }
    : idempotent
      ? { expect: 200, audited: false }
      : { expect: 404 };
  const bodyOf = (): Pick<Case, "body" | "contentType"> =>
    op.op.requestBody?.content["multipart/form-data"]
      ? { body: multipartBody([{ name: "file", filename: "ok.txt", content: "ok" }]), contentType: formType() }
      : op.op.requestBody
        ? { body: JSON.stringify(validBody(op.key)), contentType: "application/json" }
        : {};
  for (const name of names) {
    const kind = paramKind(op.path, name);
    const others = (n: string) => encodeURIComponent(ownValue(op.path, n));
    for (const bad of NOT_UUIDS) {
      const value = bad.includes("%") ? bad : encodeURIComponent(bad);
      cases.push({
        label: `{${name}}=${bad.slice(0, 20)}`,
        path: fill(op.path, (n) => (n === name ? value : others(n))),
        ...bodyOf(),
        // idempotent: 200 for what names nothing, 400 past the documented length
        ...(clientChosen ? { audited: false } : idempotent ? { audited: false } : { expect: "4xx" }),
      });
    }
    const maxLength = resolve(op.op.parameters?.find((p) => p.in === "path" && p.name === name)?.schema).maxLength;
    for (const long of maxLength === undefined ? [] : longest(maxLength))
      cases.push({
        label: `{${name}} ${maxLength} × ${long.slice(0, 2)}`,
        path: fill(op.path, (n) => (n === name ? encodeURIComponent(long) : others(n))),
        ...bodyOf(),
      });
    // A seq is a position in the caller's own log: there is no other workspace's to name.
    if (kind === "skill" || kind === "mcp" || kind === "avatarHash" || kind === "auditSeq") continue;
    // The avatar download is public by design: another workspace's avatar is served to anyone.
    if (kind === "workspace") continue;
    const unknownValue = kind === "client" ? "svc_client_00000000000000000000000000000000" : UNKNOWN_UUID;
    cases.push({
      label: `{${name}} unknown`,
      path: fill(op.path, (n) => (n === name ? unknownValue : others(n))),
      ...bodyOf(),
      ...nothing,
    });
    cases.push({
      label: `{${name}} of another workspace`,
      path: fill(op.path, (n) => (n === name ? foreign[kind]! : others(n))),
      ...bodyOf(),
      ...nothing,
    });
  }
  return cases;
}

/** Query-parameter cases: the wrong type, 100 KB, repeated. */
function queryCases(op: (typeof OPERATIONS)[number]): Case[] {
  const base = fill(op.path, (n) => encodeURIComponent(ownValue(op.path, n)));
  const params = (op.op.parameters ?? []).filter((p) => p.in === "query");
  return params.flatMap((p) => {
    const t = jsonType(p.schema);
    const numeric = t === "integer" || t === "number";
    const wrong = numeric ? "twelve" : "%00%FF{}";
    const maxLength = resolve(p.schema).maxLength;
    const extremes = numeric
      ? ["999999999999999999", "-999999999999999999", "1e3", "0x10", "1.5"]
      : ["%F0%9F%98%80%E2%80%AE%00", ...(maxLength === undefined ? [] : longest(maxLength).map(encodeURIComponent))];
    // Just inside the declared bounds is answered; just beyond them is refused.
    const { minimum, maximum } = resolve(p.schema);
    const beyond = [
      ...(maximum === undefined ? [] : [String(BigInt(maximum) + 1n)]),
      ...(minimum === undefined ? [] : [String(BigInt(minimum) - 1n)]),
    ];
    extremes.push(...[minimum, maximum].filter((b) => b !== undefined).map(String));
    return [
      ...beyond.map((v) => ({ label: `?${p.name}=${v}`, path: `${base}?${p.name}=${v}`, expect: "4xx" as const })),
      ...extremes.map((v) => ({ label: `?${p.name}=${v.slice(0, 40)}`, path: `${base}?${p.name}=${v}` })),
      { label: `?${p.name} wrong type`, path: `${base}?${p.name}=${wrong}` },
      { label: `?${p.name} 100 KB`, path: `${base}?${p.name}=${"9".repeat(100 * 1024)}` },
      { label: `?${p.name} repeated`, path: `${base}?${p.name}=1&${p.name}=2` },
      { label: `?${p.name} empty`, path: `${base}?${p.name}=` },
    ];
  });
}

/** A body sent in chunks, so the request carries no Content-Length and the size is only known while reading. */
function streamOf(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(offset, offset + 64 * 1024));
      offset += 64 * 1024;
    },
  });
}

/** Body cases: every way a JSON body can be wrong, one at a time. */
function bodyCases(op: (typeof OPERATIONS)[number]): Case[] {
  const path = fill(op.path, (n) => encodeURIComponent(ownValue(op.path, n)));
  const takesJson = !!op.op.requestBody?.content["application/json"];
  // Refused bodies of a body-taking route must change nothing; a route without a body ignores it.
  const audited = takesJson ? false : undefined;
  const expect = takesJson ? ("4xx" as const) : undefined;
  const json = "application/json";
  const cases: Case[] = [
    { label: "malformed JSON", path, body: '{"slug": "a",', contentType: json, audited, expect },
    { label: "JSON array", path, body: "[1,2,3]", contentType: json, audited, expect },
    { label: "JSON string", path, body: '"hello"', contentType: json, audited, expect },
    { label: "JSON null", path, body: "null", contentType: json, audited, expect },
    { label: "JSON number", path, body: "42", contentType: json, audited, expect },
    { label: "empty body", path, body: "", contentType: json, audited, expect },
    {
      label: "invalid UTF-8",
      path,
      body: new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
      contentType: json,
      audited,
    },
    {
      label: "deeply nested",
      path,
      body: `${"[".repeat(5000)}${"]".repeat(5000)}`,
      contentType: json,
      audited,
      expect,
    },
    {
      label: "body over 2 MiB",
      path,
      body: JSON.stringify({ pad: "x".repeat(2 * 1024 * 1024 + 10) }),
      contentType: json,
      audited,
      expect,
    },
    {
      label: "body over 2 MiB, streamed without Content-Length",
      path,
      body: streamOf(JSON.stringify({ pad: "x".repeat(2 * 1024 * 1024 + 10) })),
      contentType: json,
      audited,
      expect,
    },
  ];
  if (!takesJson) return cases;

  const schema = bodySchema(op.op);
  const props = Object.entries(schema?.properties ?? {});
  const valid = () => validBody(op.key);
  const problemShaped = shapeOf(op.path, op.method) === "problem";
  const wrongTypes = Object.fromEntries(props.map(([k, s]) => [k, WRONG[jsonType(s) ?? ""] ?? { unexpected: true }]));
  cases.push({
    label: "every field of the wrong type",
    path,
    body: JSON.stringify(wrongTypes),
    contentType: json,
    audited,
    expect,
  });
  for (const [k, s] of props) {
    const t = jsonType(s);
    const big = t === "string" ? KB100 : t === "array" && jsonType(resolve(s).items) === "string" ? [KB100] : undefined;
    if (big === undefined) continue;
    // Every string of the JSON API is bounded far below 100 KB; OAuth takes opaque values.
    const bounded = problemShaped ? { audited: false, expect: "4xx" as const } : {};
    cases.push({
      label: `${k}: 100 KB`,
      path,
      body: JSON.stringify({ ...valid(), [k]: big }),
      contentType: json,
      ...bounded,
    });
  }
  cases.push({
    label: "only unknown fields",
    path,
    body: '{"zz_unknown": 1, "__proto__": {"role": "admin"}, "constructor": {"prototype": {}}}',
    contentType: json,
    audited,
    expect,
  });
  // Unknown fields beside a valid body are refused: a misspelt optional field
  // must not silently fall back to its default. OAuth registration ignores them (RFC 7591 §2).
  cases.push({
    label: "valid body with unknown fields",
    path,
    body: JSON.stringify({ ...valid(), zz_unknown: [1, { a: null }] }),
    contentType: json,
    ...(problemShaped ? { audited: false, expect: "4xx" as const } : {}),
  });
  cases.push({
    label: "Content-Type text/plain",
    path,
    body: JSON.stringify(valid()),
    contentType: "text/plain",
    audited,
    expect,
  });
  cases.push({ label: "no Content-Type", path, body: JSON.stringify(valid()), contentType: null, audited, expect });
  cases.push({
    label: "Content-Type multipart",
    path,
    body: JSON.stringify(valid()),
    contentType: "multipart/form-data; boundary=x",
    audited,
    expect,
  });
  // Last, since they may be accepted and change state: edge values inside an otherwise valid
  // body, each accepted or refused but never a 5xx.
  for (const [k, s] of props) {
    const t = jsonType(s);
    const max = resolve(s).maxItems ?? 100;
    const maxLength = resolve(s).maxLength;
    const itemMaxLength = t === "array" ? resolve(resolve(s).items).maxLength : undefined;
    const edges: unknown[] =
      t === "string"
        ? ["\u0000\ud800\u202e😀", " ", "", ...(maxLength === undefined ? [] : longest(maxLength))]
        : t === "integer" || t === "number"
          ? [1e308, -1, 0, 1.5, 2 ** 53 + 1]
          : t === "array"
            ? [
                Array.from({ length: max }, (_, i) => `v${i}`),
                Array.from({ length: max + 1 }, (_, i) => `v${i}`),
                ["dup", "dup"],
                ...(itemMaxLength === undefined ? [] : longest(itemMaxLength).map((long) => [long])),
              ]
            : [];
    for (const edge of edges) {
      cases.push({
        label: `${k}: ${JSON.stringify(edge).slice(0, 30)}`,
        path,
        body: JSON.stringify({ ...valid(), [k]: edge }),
        contentType: json,
      });
    }
  }
  return cases;
}

describe("hostile input on every operation of the OpenAPI document", () => {
  it("the document lists the JSON routes this test knows how to reach", () => {
    expect(docRes.status).toBe(200);
    expect(OPERATIONS.length).toBeGreaterThan(40);
    for (const op of OPERATIONS) {
      if (SKIPPED[op.key]) continue;
      for (const m of op.path.matchAll(/\{([^}]+)\}/g)) paramKind(op.path, m[1]!);
      if (op.op.requestBody?.content["application/json"]) validBody(op.key);
    }
  });

  it("declares the bounds of every integer parameter", () => {
    const unbounded = OPERATIONS.flatMap((op) =>
      (op.op.parameters ?? [])
        .filter((p) => jsonType(p.schema) === "integer")
        .filter((p) => resolve(p.schema).minimum === undefined || resolve(p.schema).maximum === undefined)
        .map((p) => `${op.key} ?${p.name}`),
    );
    expect(unbounded).toEqual([]);
  });

  it("documents every status the spec lists for these endpoints", () => {
    const SPEC: Record<string, number[]> = {
      "GET /v1/admin/audit": [200, 403],
      "GET /v1/admin/audit/verify": [200, 403],
      "POST /v1/admin/users/{id}/erase": [200, 400, 403, 404],
      "POST /v1/api/admin/workspace/slug": [200, 400],
      "GET /v1/api/admin/workspace/slug/available": [200],
      "GET /v1/agents": [200],
      "POST /v1/agents": [200, 400],
      "PATCH /v1/agents/{id}": [200, 400, 404],
      "DELETE /v1/agents/{id}": [200, 400, 404],
      "POST /v1/agents/{id}/enable": [200, 404],
      "POST /v1/agents/{id}/default": [200, 400, 404],
      "POST /v1/agents/{id}/avatar": [200, 400, 404],
      "POST /v1/agents/{id}/avatar/generate": [200, 404, 500],
      "GET /v1/agents/{id}/skills": [200, 404],
      "PUT /v1/agents/{id}/skills": [200, 400, 404],
      "GET /v1/agents/{id}/mcp": [200, 404],
      "PUT /v1/agents/{id}/mcp": [200, 400, 404],
      "POST /v1/agents/{id}/suggest-instructions": [200, 404, 500],
      "POST /v1/agent-browser/ask": [200, 403],
      "GET /v1/agent-browser/connect": [101],
      "POST /v1/api/billing/checkout": [200, 400, 403, 404, 503],
      "POST /v1/api/billing/portal": [200, 403, 503],
      "POST /v1/api/billing/topup": [200, 400, 403, 404, 503],
      "GET /v1/api/billing/plans": [200, 401],
      "GET /v1/api/billing/packs": [200, 401],
      "GET /v1/api/billing": [200, 401, 403],
      "GET /v1/api/billing/credits": [200, 400, 401, 403],
      "POST /v1/webhooks/stripe": [200, 400, 500, 503],
      "GET /v1/memory/facts": [200],
      "DELETE /v1/memory/facts/{id}": [204],
      "PUT /v1/memory/freeze/{agent_slug}": [200, 404],
      "GET /v1/memory/freeze": [200],
      "DELETE /v1/memory/freeze/{agent_slug}": [200],
      "GET /v1/api/artifacts": [200],
      "DELETE /v1/api/artifacts/{id}": [200, 403, 404],
      "GET /v1/api/artifacts/{id}/download": [200, 404],
      "POST /v1/api/conversations/{id}/artifacts": [201, 400, 404, 413],
      "GET /v1/api/apps": [200],
      "POST /v1/api/artifacts/{id}/deliver": [200, 400, 404],
      "GET /v1/api/business-profile": [200],
      "PUT /v1/api/business-profile": [200, 400],
      "GET /v1/api/email/endpoints": [200],
      "GET /v1/api/email/replies": [200],
    };
    const missing = Object.entries(SPEC).flatMap(([key, statuses]) => {
      const op = OPERATIONS.find((o) => o.key === key);
      if (!op) return [`${key}: not in the document`];
      return statuses.filter((st) => !(String(st) in op.op.responses)).map((st) => `${key}: ${st}`);
    });
    expect(missing).toEqual([]);
  });

  for (const op of OPERATIONS) {
    if (SKIPPED[op.key]) continue;
    it(`${op.key}: only documented statuses, every refusal in its documented shape`, async () => {
      const failures: string[] = [];
      const cases = [...pathCases(op), ...queryCases(op), ...(op.method === "GET" ? [] : bodyCases(op))];
      for (const c of cases) await check(op, c, failures);
      expect(failures).toEqual([]);
    });
  }
});

describe("hostile input on the HTML forms (not in the JSON document)", () => {
  for (const path of ["/v1/signin", "/v1/oauth/consent"]) {
    it(`POST ${path} answers JSON, junk and oversized posts with a 4xx, never a 5xx`, async () => {
      const bodies: [string, BodyInit, string | undefined][] = [
        ["JSON", '{"email": "a@b.c", "password": "x"}', "application/json"],
        ["broken form", "%%%%=&&&", "application/x-www-form-urlencoded"],
        ["100 KB fields", `email=${KB100}&password=${KB100}&client_id=${KB100}`, "application/x-www-form-urlencoded"],
        [
          "truncated multipart",
          '--x\r\nContent-Disposition: form-data; name="email"\r\n\r\n',
          "multipart/form-data; boundary=x",
        ],
        ["no body", "", undefined],
        [
          "over 1 MiB, streamed",
          streamOf(`email=${"x".repeat(1024 * 1024 + 10)}`),
          "application/x-www-form-urlencoded",
        ],
      ];
      for (const [label, body, type] of bodies) {
        const res = await call("POST", path, { rawBody: body, headers: type ? { "Content-Type": type } : {} });
        expect(res.status, label).toBeGreaterThanOrEqual(400);
        expect(res.status, label).toBeLessThan(500);
      }
    });
  }
});
