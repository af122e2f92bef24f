import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ErasureSummarySchema } from "../src/admin/erase-schemas";
import { ApprovalListSchema, DecisionResponseSchema } from "../src/conversations/approval-schemas";
import { ConversationSchema } from "../src/conversations/schemas";
import { requireApprovalOf } from "./support/agents";
import { call, expectProblem, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { eventually } from "./support/browser";
import { inRoom } from "./support/rooms";
import { scriptedModels, toolMessages } from "./support/scripted-llm";
import { addUser, signupWorkspace } from "./support/seed";

const { script } = scriptedModels();

const FILE = { name: "plan.md", content: "the plan" };

type ApprovalRow = {
  state: string;
  requested_by: string | null;
  decided_by: string | null;
  decided_at: string | null;
  reason: string | null;
};

/**
 * A workspace whose default agent waits for approval on `deliver_file`, and a conversation the
 * admin and a member share.
 */
async function shared() {
  const ws = await signupWorkspace();
  await requireApprovalOf(ws.adminToken, ["deliver_file"]);
  const member = await addUser(ws.adminToken, "member", ["conversations:read", "conversations:write"]);
  const conversation = await newConversation(ws.adminToken);
  const added = await call("POST", `/v1/api/conversations/${conversation}/participants`, {
    token: ws.adminToken,
    body: { user_id: member.user.id },
  });
  expect(added.status).toBeLessThan(300);
  return { ws, member, conversationId: conversation };
}

const newConversation = async (token: string) =>
  (await parse(await call("POST", "/v1/api/conversations", { token, body: {} }), ConversationSchema)).id;

/** A message that makes the agent ask for `deliver_file`: the turn waits, its approval is pending. */
async function pause(token: string, conversationId: string) {
  const res = await call("POST", `/v1/api/conversations/${conversationId}/messages`, {
    token,
    body: { content: "Write the plan to a file" },
  });
  expect(res.status).toBe(200);
  const [approval] = await pendingOf(token);
  return approval!;
}

const pendingOf = async (token: string) =>
  (await parse(await call("GET", "/v1/api/approvals", { token }), ApprovalListSchema)).approvals;

const decide = (token: string, conversationId: string, approvalId: string, body: object) =>
  call("POST", `/v1/api/conversations/${conversationId}/approvals/${approvalId}`, { token, body });

const approvalRow = (id: string) =>
  env.DB.prepare("SELECT state, requested_by, decided_by, decided_at, reason FROM approvals WHERE id = ?1")
    .bind(id)
    .first<ApprovalRow>();

const approvalCount = (conversationId: string) =>
  env.DB.prepare("SELECT COUNT(*) AS n FROM approvals WHERE conversation_id = ?1")
    .bind(conversationId)
    .first<{ n: number }>()
    .then((r) => r!.n);

const turnState = (conversationId: string) =>
  inRoom(
    conversationId,
    (room) =>
      room.ctx.storage.sql.exec<{ state: string }>("SELECT state FROM turns ORDER BY position DESC").one().state,
  );

async function erase(adminToken: string, userId: string) {
  const res = await call("POST", `/v1/admin/users/${userId}/erase`, { token: adminToken, body: { confirm: true } });
  return parse(res, ErasureSummarySchema);
}

// "an erased user's personal data goes while the workspace's records stay": an approval keeps its
// decision, but not who took part in it nor the words they wrote.
describe("erasure: approvals keep their decision but lose the erased user", () => {
  it("the decider is erased: no user id, no reason, the decision and its time kept", async () => {
    const { ws, member, conversationId } = await shared();
    script({ tool: "deliver_file", args: FILE }, { text: "Delivered." });
    const approval = await pause(ws.adminToken, conversationId);
    const decided = await decide(member.token, conversationId, approval.id, {
      approved: true,
      reason: "Fine by me, Alice from accounting",
    });
    expect((await parse(decided, DecisionResponseSchema)).approval).toMatchObject({
      state: "approved",
      decided_by: member.user.id,
      reason: "Fine by me, Alice from accounting",
    });
    await eventually(async () => (await turnState(conversationId)) === "completed", 5_000);
    const before = (await approvalRow(approval.id))!;

    const summary = await erase(ws.adminToken, member.user.id);
    expect(summary.counts.approvals_anonymized).toBe(1);

    const after = (await approvalRow(approval.id))!;
    expect(after).toEqual({
      state: "approved",
      requested_by: ws.user.id,
      decided_by: null,
      decided_at: before.decided_at,
      reason: null,
    });
    // Nor does the reply's stored tool part keep the reason.
    const read = await call("GET", `/v1/api/conversations/${conversationId}`, { token: ws.adminToken });
    expect(await read.text()).not.toContain("Alice from accounting");
    const replay = await call("GET", `/v1/api/conversations/${conversationId}/stream?after=${approval.turn_id}:0`, {
      token: ws.adminToken,
    });
    expect(await replay.text()).not.toContain("Alice from accounting");
    // The decision is still taken: a second one is refused as before.
    await expectProblem(
      await decide(ws.adminToken, conversationId, approval.id, { approved: false }),
      409,
      "approval_decided",
    );
    // The audit event names the decider only in its details, which erasure redacts.
    const [event] = await auditEvents(ws.workspace.id, "approval.decided");
    expect(JSON.stringify(event!.details)).not.toContain(member.user.id);
  });

  it("the requester of a pending approval is erased: it expires, its turn ends with the call denied, the others go on", async () => {
    const { ws, member, conversationId } = await shared();
    const model = script({ tool: "deliver_file", args: FILE }, { text: "I did not deliver it." }, { text: "Hello." });
    const approval = await pause(member.token, conversationId);
    expect(approval.requested_by).toBe(member.user.id);
    // The other participant sees it waiting before the erasure.
    expect((await pendingOf(ws.adminToken)).map((a) => a.id)).toEqual([approval.id]);

    const summary = await erase(ws.adminToken, member.user.id);
    expect(summary.counts.approvals_anonymized).toBe(1);

    // The requester is gone from the row: NULL, not an empty string standing for nobody.
    const row = (await approvalRow(approval.id))!;
    expect(row).toMatchObject({ state: "expired", requested_by: null, decided_by: null, reason: null });
    expect(row.decided_at).toBeTruthy();
    const rows = await env.DB.prepare("SELECT COUNT(*) AS n FROM approvals WHERE requested_by = ''").first<{
      n: number;
    }>();
    expect(rows!.n).toBe(0);
    // Not listed for the other participant any more, and nobody can approve it now.
    expect(await pendingOf(ws.adminToken)).toEqual([]);
    await expectProblem(
      await decide(ws.adminToken, conversationId, approval.id, { approved: true }),
      410,
      "approval_expired",
    );
    // The turn has ended before the erasure answered: the call did not run, the model was told.
    expect(await turnState(conversationId)).toBe("completed");
    expect(model.requests).toHaveLength(2);
    expect(JSON.stringify(toolMessages(model.requests[1]!)[0]!.content)).toContain("not run");
    const artifacts = await env.DB.prepare("SELECT COUNT(*) AS n FROM artifacts WHERE workspace_id = ?1")
      .bind(ws.workspace.id)
      .first<{ n: number }>();
    expect(artifacts!.n).toBe(0);
    const [expired] = await auditEvents(ws.workspace.id, "approval.decided");
    expect(expired!.details).toMatchObject({ approval_id: approval.id, decision: "expired", decider: null });

    // The conversation is not held back for the approval's lifetime: the admin posts at once.
    const next = await call("POST", `/v1/api/conversations/${conversationId}/messages`, {
      token: ws.adminToken,
      body: { content: "Anyone there?" },
    });
    expect(next.status).toBe(200);
  });

  it("an approval whose requester is gone shows `requested_by: null` in the API", async () => {
    const { ws, member, conversationId } = await shared();
    script({ tool: "deliver_file", args: FILE }, { text: "Delivered." });
    const approval = await pause(ws.adminToken, conversationId);
    // As erasure leaves a row it anonymises (a pending one it also expires, so it is set here directly).
    await env.DB.prepare("UPDATE approvals SET requested_by = NULL WHERE id = ?1").bind(approval.id).run();
    const [listed] = await pendingOf(member.token);
    expect(listed).toMatchObject({ id: approval.id, requested_by: null });
    const decided = await parse(
      await decide(member.token, conversationId, approval.id, { approved: true }),
      DecisionResponseSchema,
    );
    expect(decided.approval).toMatchObject({ id: approval.id, state: "approved", requested_by: null });
    await eventually(async () => (await turnState(conversationId)) === "completed", 5_000);
  });

  it("a conversation nobody is left in goes with its approvals", async () => {
    const { ws, member } = await shared();
    const alone = await newConversation(member.token);
    script({ tool: "deliver_file", args: FILE }, { text: "unused" });
    await pause(member.token, alone);
    expect(await approvalCount(alone)).toBe(1);
    const summary = await erase(ws.adminToken, member.user.id);
    expect(summary.counts.approvals_anonymized).toBe(0);
    expect(await approvalCount(alone)).toBe(0);
  });
});

describe("DELETE /v1/api/conversations/{id}", () => {
  it("deletes the conversation's approvals, so none is listed for the other participant", async () => {
    const { ws, member, conversationId } = await shared();
    script({ tool: "deliver_file", args: FILE }, { text: "unused" });
    await pause(ws.adminToken, conversationId);
    expect(await pendingOf(member.token)).toHaveLength(1);
    const res = await call("DELETE", `/v1/api/conversations/${conversationId}`, { token: ws.adminToken });
    expect(res.status).toBe(200);
    expect(await approvalCount(conversationId)).toBe(0);
    expect(await pendingOf(member.token)).toEqual([]);
  });
});
