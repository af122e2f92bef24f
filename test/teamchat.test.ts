import { env } from "cloudflare:workers";
import { HttpResponse, http } from "msw";
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { EncryptionUnavailable, open, seal } from "../src/platform/secret-box";
import { DeliveredSchema, SlackStatusSchema } from "../src/teamchat/schemas";
import { slackSignature } from "../src/teamchat/signature";
import { signState } from "../src/teamchat/state";
import { expectProblem, parse } from "./support/api";
import { callWith } from "./support/app";
import { seedConversation, uploadFile } from "./support/artifacts";
import { auditEvents } from "./support/audit";
import { addUser, signupWorkspace } from "./support/seed";

const API = "https://slack.test/api";
const UPLOAD = "https://files.slack.test/upload/v1/abc";
const SLACK_ENV = {
  SLACK_API_BASE: API,
  SLACK_CLIENT_ID: "1234.5678",
  SLACK_CLIENT_SECRET: "client-secret-for-tests",
  SLACK_SIGNING_SECRET: "signing-secret-for-tests",
};

type SlackCall = { url: string; auth: string | null; form: Record<string, string>; bytes?: Uint8Array };
const calls: SlackCall[] = [];
let completeError: string | null = null;
let teamCounter = 0;
const tokens = new Map<string, string>();

async function recordForm(request: { url: string; headers: Headers; text(): Promise<string> }): Promise<SlackCall> {
  const form = Object.fromEntries(new URLSearchParams(await request.text()));
  const entry = { url: request.url, auth: request.headers.get("Authorization"), form };
  calls.push(entry);
  return entry;
}

const server = setupServer(
  http.post(`${API}/oauth.v2.access`, async ({ request }) => {
    const { form } = await recordForm(request);
    if (form.client_secret !== SLACK_ENV.SLACK_CLIENT_SECRET)
      return HttpResponse.json({ ok: false, error: "bad_client_secret" });
    const team = `T${++teamCounter}`;
    const token = `xoxb-${team}-${crypto.randomUUID()}`;
    tokens.set(form.code!, token);
    return HttpResponse.json({
      ok: true,
      access_token: token,
      token_type: "bot",
      scope: "files:write,chat:write,chat:write.customize,users:read,users:read.email",
      bot_user_id: "U0BOT",
      app_id: "A0APP",
      team: { id: team, name: "Acme Team" },
    });
  }),
  http.post(`${API}/files.getUploadURLExternal`, async ({ request }) => {
    await recordForm(request);
    return HttpResponse.json({ ok: true, upload_url: UPLOAD, file_id: "F0FILE" });
  }),
  http.post(UPLOAD, async ({ request }) => {
    calls.push({
      url: request.url,
      auth: request.headers.get("Authorization"),
      form: {},
      bytes: new Uint8Array(await request.arrayBuffer()),
    });
    return new HttpResponse("OK", { status: 200 });
  }),
  http.post(`${API}/files.completeUploadExternal`, async ({ request }) => {
    await recordForm(request);
    if (completeError) return HttpResponse.json({ ok: false, error: completeError });
    return HttpResponse.json({ ok: true, files: [{ id: "F0FILE" }] });
  }),
  http.post(`${API}/auth.revoke`, async ({ request }) => {
    await recordForm(request);
    return HttpResponse.json({ ok: true, revoked: true });
  }),
);

beforeAll(() => server.listen({ onUnhandledRequest: "error" }));
afterEach(() => {
  calls.length = 0;
  completeError = null;
});
afterAll(() => server.close());

type Ws = Awaited<ReturnType<typeof signupWorkspace>>;
const slack = (
  method: string,
  path: string,
  init: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
) => callWith(SLACK_ENV, method, path, init);

async function startInstall(w: Ws): Promise<string> {
  const res = await slack("POST", "/v1/api/integrations/slack/install", { token: w.adminToken });
  expect(res.status).toBe(200);
  const url = new URL(((await res.json()) as { url: string }).url);
  expect(`${url.origin}${url.pathname}`).toBe("https://slack.test/oauth/v2/authorize");
  expect(url.searchParams.get("client_id")).toBe(SLACK_ENV.SLACK_CLIENT_ID);
  expect(url.searchParams.get("scope")).toBe("files:write,chat:write,chat:write.customize,users:read,users:read.email");
  expect(url.searchParams.get("redirect_uri")).toBe("https://svc.test/v1/integrations/slack/callback");
  return url.searchParams.get("state")!;
}

const callback = (state: string, code = `code-${crypto.randomUUID()}`) =>
  slack("GET", `/v1/integrations/slack/callback?code=${code}&state=${encodeURIComponent(state)}`);

async function install(w: Ws): Promise<{ team: string; token: string }> {
  const code = `code-${crypto.randomUUID()}`;
  const res = await callback(await startInstall(w), code);
  expect(res.status).toBe(200);
  expect(await res.text()).toContain("Team chat connected");
  const status = await parse(
    await slack("GET", "/v1/api/integrations/slack", { token: w.adminToken }),
    SlackStatusSchema,
  );
  return { team: status.team_id!, token: tokens.get(code)! };
}

describe("the Slack install", () => {
  it("is 503 without the Slack app's configuration, and admin-only", async () => {
    const w = await signupWorkspace();
    await expectProblem(
      await callWith({}, "POST", "/v1/api/integrations/slack/install", { token: w.adminToken }),
      503,
      "team_chat_not_configured",
    );
    const member = await addUser(w.adminToken, "member", ["conversations:read"]);
    await expectProblem(
      await slack("POST", "/v1/api/integrations/slack/install", { token: member.token }),
      403,
      "admin_required",
    );
  });

  it("exchanges the code, seals the bot token, reports the install and audits it", async () => {
    const w = await signupWorkspace();
    const before = await parse(
      await slack("GET", "/v1/api/integrations/slack", { token: w.adminToken }),
      SlackStatusSchema,
    );
    expect(before).toEqual({ installed: false, team_id: null, team_name: null, bot_user_id: null, installed_at: null });
    const { team, token } = await install(w);
    const exchange = calls.find((c) => c.url.endsWith("/oauth.v2.access"))!;
    expect(exchange.form).toMatchObject({
      client_id: SLACK_ENV.SLACK_CLIENT_ID,
      redirect_uri: "https://svc.test/v1/integrations/slack/callback",
    });
    const status = await parse(
      await slack("GET", "/v1/api/integrations/slack", { token: w.adminToken }),
      SlackStatusSchema,
    );
    expect(status).toMatchObject({ installed: true, team_id: team, team_name: "Acme Team", bot_user_id: "U0BOT" });
    const row = await env.DB.prepare("SELECT bot_token_sealed FROM slack_installs WHERE workspace_id = ?1")
      .bind(w.workspace.id)
      .first<{ bot_token_sealed: string }>();
    expect(row!.bot_token_sealed).not.toContain(token);
    expect(await open(env, row!.bot_token_sealed, `slack:${w.workspace.id}`)).toBe(token);
    const [event] = await auditEvents(w.workspace.id, "teamchat.install");
    expect(event).toMatchObject({ target: `slack_team:${team}`, actor_id: w.user.id });
    expect(JSON.stringify(event)).not.toContain(token);
  });

  it("refuses a tampered, expired or reused state", async () => {
    const w = await signupWorkspace();
    const state = await startInstall(w);
    const [payload, mac] = state.split(".");
    const forged = JSON.parse(atob(payload!.replaceAll("-", "+").replaceAll("_", "/"))) as Record<string, unknown>;
    forged.w = crypto.randomUUID();
    const tampered = `${btoa(JSON.stringify(forged)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")}.${mac}`;
    for (const bad of [tampered, `${payload}.AAAA`, "garbage", ""]) {
      const res = await callback(bad);
      expect(res.status).toBe(400);
      expect(await res.text()).toContain("not valid");
    }
    const expired = await signState(SLACK_ENV.SLACK_CLIENT_SECRET, w.workspace.id, w.user.id, Date.now() - 11 * 60_000);
    const old = await callback(expired);
    expect(old.status).toBe(400);
    expect(await old.text()).toContain("expired");
    expect(calls).toEqual([]);

    expect((await callback(state)).status).toBe(200);
    const again = await callback(state);
    expect(again.status).toBe(400);
    expect(await again.text()).toContain("already used");
    expect(calls.filter((c) => c.url.endsWith("/oauth.v2.access"))).toHaveLength(1);
  });

  it("a state signed for a user who is no longer an admin does not install", async () => {
    const w = await signupWorkspace();
    const member = await addUser(w.adminToken, "member", ["conversations:read"]);
    const res = await callback(await signState(SLACK_ENV.SLACK_CLIENT_SECRET, w.workspace.id, member.user.id));
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("admin");
  });

  it("uninstall revokes the token at Slack and forgets it", async () => {
    const w = await signupWorkspace();
    const { team, token } = await install(w);
    calls.length = 0;
    expect((await slack("DELETE", "/v1/api/integrations/slack", { token: w.adminToken })).status).toBe(204);
    expect(calls.map((c) => [c.url, c.auth])).toEqual([[`${API}/auth.revoke`, `Bearer ${token}`]]);
    const status = await parse(
      await slack("GET", "/v1/api/integrations/slack", { token: w.adminToken }),
      SlackStatusSchema,
    );
    expect(status.installed).toBe(false);
    const [event] = await auditEvents(w.workspace.id, "teamchat.uninstall");
    expect(event).toMatchObject({ target: `slack_team:${team}`, intent: "uninstall" });
    expect((await slack("DELETE", "/v1/api/integrations/slack", { token: w.adminToken })).status).toBe(204);
  });
});

describe("POST /v1/api/artifacts/{id}/deliver", () => {
  let w: Ws;
  let conv: string;
  let artifactId: string;
  const CONTENT = "quarterly,numbers\n1,2\n";
  beforeAll(async () => {
    w = await signupWorkspace();
    conv = await seedConversation(w.workspace.id, w.user.id);
    const res = await uploadFile(w.adminToken, conv, { name: "numbers.csv", content: CONTENT });
    artifactId = ((await res.json()) as { id: string }).id;
  });

  it("without a live install: 400 team_chat_not_installed", async () => {
    await expectProblem(
      await slack("POST", `/v1/api/artifacts/${artifactId}/deliver`, {
        token: w.adminToken,
        body: { channel_id: "C0CHAN" },
      }),
      400,
      "team_chat_not_installed",
    );
  });

  it("uploads in three calls with the bot token, streams the bytes, and comments as the agent for the user", async () => {
    const { token } = await install(w);
    calls.length = 0;
    const res = await slack("POST", `/v1/api/artifacts/${artifactId}/deliver`, {
      token: w.adminToken,
      body: { channel_id: "C0CHAN", message: "Here are the numbers" },
    });
    expect(await parse(res, DeliveredSchema)).toEqual({ delivered: true, channel_id: "C0CHAN", file_id: "F0FILE" });
    expect(calls.map((c) => c.url)).toEqual([
      `${API}/files.getUploadURLExternal`,
      UPLOAD,
      `${API}/files.completeUploadExternal`,
    ]);
    expect(calls[0]!.auth).toBe(`Bearer ${token}`);
    expect(calls[0]!.form).toEqual({ filename: "numbers.csv", length: String(CONTENT.length) });
    expect(new TextDecoder().decode(calls[1]!.bytes)).toBe(CONTENT);
    expect(calls[2]!.auth).toBe(`Bearer ${token}`);
    expect(calls[2]!.form.channel_id).toBe("C0CHAN");
    expect(JSON.parse(calls[2]!.form.files!)).toEqual([{ id: "F0FILE", title: "numbers.csv" }]);
    const agent = await env.DB.prepare(
      "SELECT a.display_name AS name FROM conversations c JOIN agents a ON a.id = c.agent_id WHERE c.id = ?1",
    )
      .bind(conv)
      .first<{ name: string }>();
    expect(calls[2]!.form.initial_comment).toBe(
      `*${agent!.name}*: Here are the numbers\n_shared from studio by Ada Admin_`,
    );
    const [event] = await auditEvents(w.workspace.id, "teamchat.deliver");
    expect(event).toMatchObject({ outcome: "success", target: `artifact:${artifactId}`, conversation_id: conv });
    expect(event!.details).toMatchObject({ channel_id: "C0CHAN", file_id: "F0FILE" });
  });

  it("maps not_in_channel and channel_not_found to 400 bot_not_in_channel", async () => {
    for (const error of ["not_in_channel", "channel_not_found"]) {
      completeError = error;
      await expectProblem(
        await slack("POST", `/v1/api/artifacts/${artifactId}/deliver`, {
          token: w.adminToken,
          body: { channel_id: "C0NOPE" },
        }),
        400,
        "bot_not_in_channel",
      );
    }
  });

  it("refuses sensitive artifacts, invisible ones and bad bodies", async () => {
    const res = await uploadFile(w.adminToken, conv, { name: "secret.txt", content: "s" }, [
      { name: "sensitive", content: "true" },
    ]);
    const sensitive = (await res.json()) as { id: string; sensitive: boolean };
    expect(sensitive.sensitive).toBe(true);
    calls.length = 0;
    await expectProblem(
      await slack("POST", `/v1/api/artifacts/${sensitive.id}/deliver`, {
        token: w.adminToken,
        body: { channel_id: "C0CHAN" },
      }),
      400,
      "not_deliverable",
    );
    expect(calls).toEqual([]);
    const outsider = await addUser(w.adminToken, "member", ["conversations:read"]);
    await expectProblem(
      await slack("POST", `/v1/api/artifacts/${artifactId}/deliver`, {
        token: outsider.token,
        body: { channel_id: "C0CHAN" },
      }),
      404,
    );
    await expectProblem(
      await slack("POST", `/v1/api/artifacts/${artifactId}/deliver`, {
        token: w.adminToken,
        body: { channel_id: "#general" },
      }),
      400,
      "validation_failed",
    );
  });

  it("a token Slack no longer accepts retires the install", async () => {
    const v = await signupWorkspace();
    const c = await seedConversation(v.workspace.id, v.user.id);
    const a = ((await (await uploadFile(v.adminToken, c, { name: "a.txt", content: "a" })).json()) as { id: string })
      .id;
    await install(v);
    completeError = "token_revoked";
    await expectProblem(
      await slack("POST", `/v1/api/artifacts/${a}/deliver`, { token: v.adminToken, body: { channel_id: "C0CHAN" } }),
      400,
      "team_chat_not_installed",
    );
    const status = await parse(
      await slack("GET", "/v1/api/integrations/slack", { token: v.adminToken }),
      SlackStatusSchema,
    );
    expect(status.installed).toBe(false);
  });
});

describe("POST /v1/webhooks/slack", () => {
  const now = () => String(Math.floor(Date.now() / 1000));
  async function signed(body: unknown, timestamp = now(), secret = SLACK_ENV.SLACK_SIGNING_SECRET) {
    const raw = JSON.stringify(body);
    return slack("POST", "/v1/webhooks/slack", {
      body,
      headers: {
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": await slackSignature(secret, timestamp, raw),
      },
    });
  }

  it("answers url_verification when signed, refuses a bad or missing signature and a stale timestamp", async () => {
    const res = await signed({ type: "url_verification", challenge: "abc123" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, challenge: "abc123" });
    await expectProblem(
      await signed({ type: "url_verification", challenge: "x" }, now(), "wrong-secret"),
      400,
      "invalid_signature",
    );
    await expectProblem(
      await slack("POST", "/v1/webhooks/slack", { body: { type: "url_verification" } }),
      400,
      "invalid_signature",
    );
    const stale = String(Math.floor(Date.now() / 1000) - 6 * 60);
    await expectProblem(await signed({ type: "url_verification", challenge: "x" }, stale), 400, "stale_request");
    const future = String(Math.floor(Date.now() / 1000) + 6 * 60);
    await expectProblem(await signed({ type: "url_verification", challenge: "x" }, future), 400, "stale_request");
    const fresh = String(Math.floor(Date.now() / 1000) - 4 * 60);
    expect((await signed({ type: "url_verification", challenge: "x" }, fresh)).status).toBe(200);
  });

  it("app_uninstalled and tokens_revoked (bot) mark the team's install not live, and are audited", async () => {
    for (const event of [{ type: "app_uninstalled" }, { type: "tokens_revoked", tokens: { bot: ["U0BOT"] } }]) {
      const w = await signupWorkspace();
      const { team } = await install(w);
      const res = await signed({ type: "event_callback", team_id: team, event });
      expect(res.status).toBe(200);
      const status = await parse(
        await slack("GET", "/v1/api/integrations/slack", { token: w.adminToken }),
        SlackStatusSchema,
      );
      expect(status.installed).toBe(false);
      const [audited] = await auditEvents(w.workspace.id, "teamchat.uninstall");
      expect(audited).toMatchObject({ actor_kind: "system", intent: event.type, target: `slack_team:${team}` });
    }
  });

  it("is 503 when team chat is not configured", async () => {
    const res = await callWith({}, "POST", "/v1/webhooks/slack", { body: { type: "url_verification" } });
    await expectProblem(res, 503, "team_chat_not_configured");
  });
});

describe("the AES-GCM secret box", () => {
  const key = () => btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))));

  it("seals with a fresh IV and a key id, opens only with the same aad, and survives a key rotation", async () => {
    const k1 = key();
    const e1 = { ...env, ENCRYPTION_KEY: k1 } as Env;
    const a = await seal(e1, "xoxb-secret", "slack:w1");
    const b = await seal(e1, "xoxb-secret", "slack:w1");
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[0-9a-f]{8}\.[A-Za-z0-9_-]+$/);
    expect(a).not.toContain("xoxb");
    expect(await open(e1, a, "slack:w1")).toBe("xoxb-secret");
    await expect(open(e1, a, "slack:w2")).rejects.toThrow();
    // One character of the tag changed (the second-to-last: the last may carry padding bits only).
    const at = a.length - 2;
    const flipped = `${a.slice(0, at)}${a[at] === "A" ? "B" : "A"}${a.slice(at + 1)}`;
    expect(flipped).not.toBe(a);
    await expect(open(e1, flipped, "slack:w1")).rejects.toThrow();

    const rotated = { ...env, ENCRYPTION_KEY: key(), ENCRYPTION_KEY_PREVIOUS: k1 } as Env;
    expect(await open(rotated, a, "slack:w1")).toBe("xoxb-secret");
    const c = await seal(rotated, "new", "x");
    expect(c.split(".")[0]).not.toBe(a.split(".")[0]);
    await expect(open({ ...env, ENCRYPTION_KEY: key() } as Env, a, "slack:w1")).rejects.toThrow(/not configured/);
  });

  it("without ENCRYPTION_KEY a public deployment refuses (503), a local one uses the development key", async () => {
    const production = { ...env, ENCRYPTION_KEY: undefined, BASE_URL: "https://agents.example.com" } as Env;
    await expect(seal(production, "x")).rejects.toBeInstanceOf(EncryptionUnavailable);
    await expect(seal({ ...env, ENCRYPTION_KEY: "c2hvcnQ=" } as Env, "x")).rejects.toBeInstanceOf(
      EncryptionUnavailable,
    );
    const local = { ...env, ENCRYPTION_KEY: undefined, BASE_URL: "http://localhost:8787" } as Env;
    expect(await open(local, await seal(local, "dev"))).toBe("dev");
    const w = await signupWorkspace();
    await expectProblem(
      await callWith(
        { ...SLACK_ENV, BASE_URL: "https://agents.example.com" },
        "POST",
        "/v1/api/integrations/slack/install",
        {
          token: w.adminToken,
        },
      ),
      503,
      "encryption_not_configured",
    );
  });
});
