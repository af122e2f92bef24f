/** "Notify when a team-chat install exists: a message to the requester in Slack with a link to the conversation". */
import { env } from "cloudflare:workers";
import { HttpResponse, http } from "msw";
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ConversationSchema } from "../src/conversations/schemas";
import { seal } from "../src/platform/secret-box";
import { requireApprovalOf } from "./support/agents";
import { call, parse } from "./support/api";
import { eventually } from "./support/browser";
import { scriptedModels } from "./support/scripted-llm";
import { signupWorkspace } from "./support/seed";

const API = "https://slack.com/api"; // the Worker's SLACK_API_BASE (wrangler.toml)
type Sent = { method: string; auth: string | null; form: Record<string, string> };
const sent: Sent[] = [];

const slack = setupServer(
  http.post(`${API}/users.lookupByEmail`, async ({ request }) => {
    const form = Object.fromEntries(new URLSearchParams(await request.text()));
    sent.push({ method: "users.lookupByEmail", auth: request.headers.get("Authorization"), form });
    return HttpResponse.json({ ok: true, user: { id: "U0ADA" } });
  }),
  http.post(`${API}/chat.postMessage`, async ({ request }) => {
    const form = Object.fromEntries(new URLSearchParams(await request.text()));
    sent.push({ method: "chat.postMessage", auth: request.headers.get("Authorization"), form });
    return HttpResponse.json({ ok: true, channel: "D0ADA", ts: "1.0" });
  }),
);
beforeAll(() => slack.listen({ onUnhandledRequest: "bypass" }));
afterEach(() => {
  sent.length = 0;
});
afterAll(() => slack.close());

const { script } = scriptedModels();

async function pausedTurnIn(ws: Awaited<ReturnType<typeof signupWorkspace>>) {
  await requireApprovalOf(ws.adminToken, ["deliver_file"]);
  const c = await parse(
    await call("POST", "/v1/api/conversations", { token: ws.adminToken, body: {} }),
    ConversationSchema,
  );
  script({ tool: "deliver_file", args: { name: "a.md", content: "x" } });
  const res = await call("POST", `/v1/api/conversations/${c.id}/messages`, {
    token: ws.adminToken,
    body: { content: "file it" },
  });
  expect(res.status).toBe(200);
  return c.id;
}

describe("an approval request with team chat installed", () => {
  it("messages the requester in Slack (found by email) with a link to the conversation", async () => {
    const ws = await signupWorkspace();
    const token = "xoxb-approvals-test";
    const now = new Date().toISOString();
    await env.DB.prepare(
      `INSERT INTO slack_installs (workspace_id, team_id, bot_token_sealed, scopes, installed_at, live, updated_at)
       VALUES (?1, 'T0APPROVE', ?2, 'chat:write,users:read,users:read.email', ?3, 1, ?3)`,
    )
      .bind(ws.workspace.id, await seal(env, token, `slack:${ws.workspace.id}`), now)
      .run();
    const conversationId = await pausedTurnIn(ws);
    await eventually(() => sent.length === 2);
    expect(sent[0]).toEqual({
      method: "users.lookupByEmail",
      auth: `Bearer ${token}`,
      form: { email: ws.email },
    });
    expect(sent[1]!.method).toBe("chat.postMessage");
    expect(sent[1]!.form.channel).toBe("U0ADA");
    expect(sent[1]!.form.text).toContain(`https://svc.test/v1/api/conversations/${conversationId}`);
    expect(sent[1]!.form.text).toContain("deliver_file");
  });

  it("sends nothing without an install", async () => {
    const ws = await signupWorkspace();
    await pausedTurnIn(ws);
    await new Promise((r) => setTimeout(r, 200));
    expect(sent).toEqual([]);
  });
});
